import { Command, Option } from 'commander';
import { example, jsonOption, type CommandEnv } from '../command-kit';
import { printJson, renderTable } from '../io';

/** `ttlstream schemas export`: the stream contract's machine-readable parts, for consumers in other languages. */
export function schemasCommand(env: CommandEnv): Command {
  const schemas = new Command('schemas').description(
    'the stream contract as files: Avro schemas, JSON Schemas of the JSON encoding, fingerprints',
  );
  const exportCmd = new Command('export')
    .description(
      'write every Avro schema version (.avsc), a JSON Schema per message kind for the JSON encoding, and the ' +
        'fingerprint table (fingerprints.json, fingerprints.md) into a directory (created if missing; files of the ' +
        'same name are replaced, nothing else is touched)',
    )
    .addOption(new Option('-d, --dir <directory>', 'where to write the files').makeOptionMandatory())
    .addOption(jsonOption())
    // No configuration or service is needed: the schemas are part of this release. Hence no action() context.
    .action(async (opts: { dir: string; json?: boolean }) => {
      const { writeSchemaExport } = await import('../../schemas/export');
      const written = writeSchemaExport(opts.dir, env.io.cwd);
      if (opts.json) return printJson(env.io, { dir: written.dir, files: written.files });
      env.io.stdout.write(
        renderTable(
          ['FILE', 'BYTES'],
          written.files.map((f) => [f.name, String(f.bytes)]),
        ),
      );
    });
  example(
    exportCmd,
    'ttlstream schemas export --dir ./ttlstream-schemas',
    'ttlstream schemas export -d out --json',
  );
  return schemas.addCommand(exportCmd);
}
