import { Command } from 'commander';
import type { CliContext } from '../kit/context';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { printJson, renderTable } from '../kit/io';
import { flattenConfig, redactSecrets } from '../kit/redact';

export function configCommand(env: CommandEnv): Command {
  const cmd = new Command('config')
    .description(
      'print the effective configuration and where each value comes from (default, endpoints file, config file, env, flag), secrets redacted',
    )
    .addOption(jsonOption())
    .option(
      '--env-file <file>',
      'read the settings from a file of NAME=VALUE lines, as a ConfigMap gives them to the pods (its variables win over the environment)',
    )
    .action(action<{ json?: boolean; envFile?: string }>(env, printConfig));
  return example(
    cmd,
    'ttlstream config',
    'TTLSTREAM_KAFKA_BROKERS=k1:9092,k2:9092 ttlstream config --json',
    'ttlstream config --env-file ttlstream.env   # what the pods of a ConfigMap would run with',
  );
}

/** `config`'s action: the settings in effect (secrets redacted), with where each comes from. */
async function printConfig(
  ctx: CliContext,
  opts: { json?: boolean; envFile?: string },
): Promise<number | void> {
  const config = redactSecrets(ctx.config);
  ctx.announceEndpoints();
  if (opts.json) return printJson(ctx.io, config);
  const { envName, sourceOf } = await import('../../core/config');
  const sources = ctx.configSources();
  const rows = flattenConfig(config).map(([path, value]) => [
    path,
    value,
    sourceOf(sources, path),
    envName(path.split('.')),
  ]);
  ctx.io.stdout.write(renderTable(['setting', 'value', 'source', 'environment variable'], rows));
}
