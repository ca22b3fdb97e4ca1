import { Command, Option } from 'commander';
import { action, argParser, example, type CommandEnv } from '../kit/command-kit';
import { parseDuration } from '../kit/duration';
import { ROLE_NAMES, parseRoles, type RoleName } from '../kit/run-roles';

export function runCommand(env: CommandEnv): Command {
  const cmd = new Command('run')
    .description(
      'run the chosen roles in one process until SIGTERM/SIGINT (graceful stop; a second signal forces exit)',
    )
    .option(`--roles <list>`, `comma-separated roles (${ROLE_NAMES.join(', ')})`, argParser(parseRoles), [
      ...ROLE_NAMES,
    ])
    .addOption(
      new Option(
        '--shutdown-timeout <duration>',
        'budget for the graceful stop; after it the process exits 1',
      )
        .env('TTLSTREAM_SHUTDOWN_TIMEOUT')
        .argParser(argParser(parseDuration))
        .default(30_000, '30s'),
    )
    .option(
      '--dry-run',
      'the producer evaluates and logs what it would delete; nothing is published or deleted',
    )
    .action(
      action<{ roles: RoleName[]; shutdownTimeout: number; dryRun?: boolean }>(
        env,
        async (ctx, opts) => (await import('./roles')).runRoles(ctx, opts),
        { longRunning: true, overrides: (opts) => (opts.dryRun ? { producer: { dryRun: true } } : {}) },
      ),
    );
  return example(
    cmd,
    'ttlstream run',
    'ttlstream run --roles scanner,producer --shutdown-timeout 45s',
    'ttlstream run --roles scanner,producer --dry-run   # see what TTL would delete, delete nothing',
    'TTLSTREAM_METRICS_PORT=9464 ttlstream run --roles archiver   # /metrics without the API',
  );
}
