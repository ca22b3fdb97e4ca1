import { Command, Option } from 'commander';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import type { CliContext } from '../kit/context';
import { printJson, renderTable } from '../kit/io';

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
    .action((opts: { dir: string; json?: boolean }) => exportSchemas(env, opts));
  example(
    exportCmd,
    'ttlstream schemas export --dir ./ttlstream-schemas',
    'ttlstream schemas export -d out --json',
  );
  return schemas.addCommand(exportCmd).addCommand(registerCommand(env));
}

interface RegisterOptions {
  registry?: string;
  topic?: string[];
  table?: string[];
  subjectNameStrategy?: 'topic' | 'record';
  compatibility?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `ttlstream schemas register`: for setups where a deploy job, not the service, owns registration. */
function registerCommand(env: CommandEnv): Command {
  const register = new Command('register')
    .description(
      'register every version of the stream schemas (oldest first) in a Confluent-compatible schema registry, under ' +
        'the subjects of the stream topics; idempotent. With --dry-run: only look up what is registered already',
    )
    .option('--registry <url>', 'the registry (default: schemas.registry.url)')
    .option(
      '--topic <name...>',
      "the stream topics (default: the shared topic, or with per-table naming the tables' topics)",
    )
    .option(
      '-t, --table <name...>',
      'with per-table naming: the tables (default: every table with TTL enabled)',
    )
    .addOption(
      new Option(
        '--subject-name-strategy <strategy>',
        'default: schemas.registry.subjectNameStrategy',
      ).choices(['topic', 'record']),
    )
    .option(
      '--compatibility <level>',
      'set this compatibility level on each subject first (BACKWARD, FULL, …)',
    )
    .option(
      '--dry-run',
      'register nothing and change no subject setting: say what is registered and what would be',
    )
    .addOption(jsonOption())
    .action(
      action<RegisterOptions>(env, (ctx, opts) => runRegister(ctx, opts), {
        overrides: (opts) =>
          typeof opts.registry === 'string' ? { schemas: { registry: { url: opts.registry } } } : {},
      }),
    );
  example(
    register,
    'ttlstream schemas register --registry https://registry.internal:8081 --dry-run',
    'ttlstream schemas register --compatibility BACKWARD --json',
  );
  return register;
}

async function runRegister(ctx: CliContext, opts: RegisterOptions): Promise<number | void> {
  const { config } = ctx;
  const registry = config.schemas.registry;
  const { UsageError } = await import('../kit/exit-codes');
  if (!registry)
    throw new UsageError(
      'no schema registry: pass --registry <url> or set schemas.registry.url (TTLSTREAM_SCHEMAS_REGISTRY_URL)',
    );
  const { streamTopicFor } = await import('../../core/topics');
  const { SchemaRegistryClient } = await import('../../core/schema-registry');
  const { registrationPlan } = await import('../../schemas/subjects');
  let topics = opts.topic ?? [];
  if (topics.length === 0) {
    let tables = opts.table ?? [];
    if (config.topics.naming === 'per-table' && tables.length === 0)
      tables = (await ctx.settingsStore.enabledTables()).map((t) => t.table);
    topics =
      config.topics.naming === 'shared'
        ? [config.topics.shared]
        : tables.map((t) => streamTopicFor(config, t));
  }
  if (topics.length === 0)
    throw new UsageError('no stream topics: pass --topic or --table (no table has TTL enabled)');
  const client = new SchemaRegistryClient(registry);
  const plan = registrationPlan(topics, opts.subjectNameStrategy ?? registry.subjectNameStrategy);
  const rows: Array<{ subject: string; schema: string; id: number | null; result: string }> = [];
  const subjects = [...new Set(plan.map((p) => p.subject))];
  if (opts.compatibility && !opts.dryRun)
    for (const subject of subjects) await client.setCompatibility(subject, opts.compatibility.toUpperCase());
  for (const p of plan) {
    const schema = `${p.schema.name} v${p.schema.version}`;
    if (opts.dryRun) {
      const id = await client.lookup(p.subject, p.text);
      rows.push({
        subject: p.subject,
        schema,
        id: id ?? null,
        result: id === undefined ? 'would register' : 'registered',
      });
    } else {
      const id = await client.register(p.subject, p.text);
      rows.push({ subject: p.subject, schema, id, result: 'registered' });
    }
  }
  if (opts.json)
    return printJson(ctx.io, { registry: registry.url, dryRun: opts.dryRun === true, subjects: rows });
  ctx.io.stdout.write(
    renderTable(
      ['SUBJECT', 'SCHEMA', 'ID', opts.dryRun ? 'STATE (dry run)' : 'RESULT'],
      rows.map((r) => [r.subject, r.schema, r.id === null ? '-' : String(r.id), r.result]),
    ),
  );
}

/** `schemas export`'s action: every schema version, the JSON Schemas and the fingerprints written to --dir. */
async function exportSchemas(env: CommandEnv, opts: { dir: string; json?: boolean }): Promise<void> {
  const { writeSchemaExport } = await import('../../schemas/export');
  const written = writeSchemaExport(opts.dir, env.io.cwd);
  if (opts.json) return printJson(env.io, { dir: written.dir, files: written.files });
  env.io.stdout.write(
    renderTable(
      ['FILE', 'BYTES'],
      written.files.map((f) => [f.name, String(f.bytes)]),
    ),
  );
}
