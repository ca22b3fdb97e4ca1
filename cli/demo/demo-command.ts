import { Command, Option } from 'commander';
import { action, argParser, example, type CommandEnv } from '../kit/command-kit';
import { parseDuration } from '../kit/duration';

export function demoCommand(env: CommandEnv): Command {
  const cmd = new Command('demo')
    .description(
      'bring up the local stack, expire items of a demo table live (Kafka records, archive files), restore one; exit 0 only if every stage was seen',
    )
    .option('--no-stack', 'do not run infra/up.sh (services already configured)')
    .addOption(
      new Option(
        '--watch-timeout <duration>',
        'budget for items to expire, records to arrive and files to land',
      )
        .argParser(argParser(parseDuration))
        .default(75_000, '75s'),
    )
    .action(
      action<{ stack: boolean; watchTimeout: number }>(
        env,
        async (ctx, opts) =>
          (await import('./demo')).runDemo(ctx, {
            stack: opts.stack,
            watchTimeoutMs: opts.watchTimeout,
          }),
        // The demo's terminal output is the show; client warnings would interleave with it (errors still show).
        { overrides: async () => (await import('./demo')).demoOverrides(), quietLevel: 'error' },
      ),
    );
  return example(
    cmd,
    'ttlstream demo        # what `npm run demo` runs, after a build',
    'ttlstream demo --no-stack --watch-timeout 2m',
  );
}
