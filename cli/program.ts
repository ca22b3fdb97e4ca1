import { Command, CommanderError, Option } from 'commander';
import { addOutputOptions, type CommandEnv } from './kit/command-kit';
import { EXIT, errorLine, exitCodeFor } from './kit/exit-codes';
import { processIo, type CliIo } from './kit/io';
import { guardOptionValues } from './kit/option-guard';
import { VERSION } from '../core/version';

type CommandFactory = (env: CommandEnv) => Command;

/**
 * The command modules, each required when the program is built with its command: a command line that starts with
 * its command (`ttlstream archive query …`) loads and builds that one alone (about 10 ms of every start, measured
 * for `archive query`); help, completion and everything else build the whole tree.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const load = {
  run: (): typeof import('./run/run') => require('./run/run'),
  ttl: (): typeof import('./ttl/ttl') => require('./ttl/ttl'),
  preview: (): typeof import('./preview/preview') => require('./preview/preview'),
  restore: (): typeof import('./restore/restore') => require('./restore/restore'),
  replay: (): typeof import('./replay/replay') => require('./replay/replay'),
  archive: (): typeof import('./archive/archive') => require('./archive/archive'),
  audit: (): typeof import('./audit/audit') => require('./audit/audit'),
  topics: (): typeof import('./topics/topics') => require('./topics/topics'),
  guard: (): typeof import('./guard/guard') => require('./guard/guard'),
  status: (): typeof import('./status/status') => require('./status/status'),
  index: (): typeof import('./index/expiry-index') => require('./index/expiry-index'),
  demo: (): typeof import('./demo/demo-command') => require('./demo/demo-command'),
  config: (): typeof import('./config/config') => require('./config/config'),
  'iam-policy': (): typeof import('./iam-policy/iam-policy') => require('./iam-policy/iam-policy'),
  schemas: (): typeof import('./schemas/schemas') => require('./schemas/schemas'),
  api: (): typeof import('./api/api') => require('./api/api'),
  completion: (): typeof import('./completion/completion') => require('./completion/completion'),
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** The commands in the order `ttlstream --help` lists them. */
const COMMANDS: ReadonlyArray<{ name: string; make: () => CommandFactory }> = [
  { name: 'run', make: () => load.run().runCommand },
  { name: 'ttl', make: () => load.ttl().ttlCommand },
  { name: 'preview', make: () => load.preview().previewCommand },
  { name: 'restore', make: () => load.restore().restoreCommand },
  { name: 'replay', make: () => load.replay().replayCommand },
  { name: 'archive', make: () => load.archive().archiveCommand },
  { name: 'audit', make: () => load.audit().auditCommand },
  { name: 'topics', make: () => load.topics().topicsCommand },
  { name: 'guard', make: () => load.guard().guardCommand },
  { name: 'status', make: () => load.status().statusCommand },
  { name: 'index', make: () => load.index().expiryIndexCommand },
  { name: 'demo', make: () => load.demo().demoCommand },
  { name: 'config', make: () => load.config().configCommand },
  { name: 'iam-policy', make: () => load['iam-policy']().iamPolicyCommand },
  { name: 'schemas', make: () => load.schemas().schemasCommand },
  { name: 'api', make: () => load.api().apiCommand },
  { name: 'completion', make: () => load.completion().completionCommand },
];

/**
 * The whole command tree, writing to `io`, or the root with its command `only`. Built fresh per invocation so tests
 * can run it in-process.
 */
export function buildProgram(env: CommandEnv, only?: string): Command {
  const { io } = env;
  const program = new Command('ttlstream')
    .description(
      'Precise, auditable TTL for DynamoDB-API tables: expired items deleted, announced on Kafka, archived.',
    )
    .version(VERSION, '-V, --version')
    .addOption(new Option('-c, --config <file>', 'JSON configuration file (else $TTLSTREAM_CONFIG)'))
    .addOption(
      new Option('--endpoint-url <url>', 'DynamoDB-API endpoint (dynamodb.endpoint; like the aws cli)'),
    )
    .addOption(new Option('--region <region>', 'AWS region (region)'))
    .addOption(new Option('--brokers <host:port,...>', 'Kafka bootstrap brokers (kafka.brokers)'))
    .addOption(
      new Option(
        '--local-stack <dir>',
        'use the local stack whose endpoints.json is in <dir> (else $TTLSTREAM_LOCAL_STACK; without either, no endpoints file is read)',
      ),
    )
    .addOption(new Option('-q, --quiet', 'no "endpoints: ..." line on stderr (also TTLSTREAM_QUIET=1)'))
    .addOption(
      new Option('--log-level <level>', 'log level on stderr').choices([
        'fatal',
        'error',
        'warn',
        'info',
        'debug',
        'trace',
        'silent',
      ]),
    )
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
      outputError: (s, write) => write(errorLine(new Error(s)) + '\n'),
      getOutHelpWidth: () => io.stdout.columns ?? 100,
      getErrHelpWidth: () => io.stderr.columns ?? 100,
    })
    .exitOverride()
    .showSuggestionAfterError(true)
    .allowExcessArguments(false);
  program.addHelpText(
    'after',
    '\nExit codes: 0 ok, 1 failure, 2 usage or configuration error, 3 nothing matched (--fail-if-empty), 4 audit breach,\n' +
      "130 Ctrl-C, 141 stdout's reader left early (| head).\n" +
      "Configuration: flags (--endpoint-url, --region, --brokers, and each command's own) > TTLSTREAM_* environment\n" +
      "> --config file > a local stack's endpoints.json (only with --local-stack <dir> or TTLSTREAM_LOCAL_STACK) > defaults\n" +
      '(see docs/configuration.md).\n\nExample:\n  $ ttlstream run --roles scanner,producer\n',
  );
  for (const { name, make } of COMMANDS) {
    if (only === undefined || name === only) program.addCommand(inherit(program, make()(env)));
  }
  addOutputOptions(program);
  guardOptionValues(program);
  return program;
}

/** addCommand does not copy the parent's settings (only .command() does); subcommands must exit and print like the root. */
function inherit(parent: Command, child: Command): Command {
  child.copyInheritedSettings(parent);
  for (const grandchild of child.commands) inherit(child, grandchild);
  return child;
}

/**
 * The command a command line names first, when it is one that needs no other (completion describes the whole tree);
 * undefined builds them all: options first, `help`, a typo (commander suggests the nearest command).
 */
function commandNamed(argv: string[]): string | undefined {
  const first = argv[0];
  return first !== 'completion' && COMMANDS.some((c) => c.name === first) ? first : undefined;
}

/** Runs the CLI and returns the exit code; never throws, never calls process.exit. */
export async function runCli(argv: string[], io: CliIo = processIo()): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram({ io, setExitCode: (c) => (code = c) }, commandNamed(argv));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    // Commander has already printed its own errors (through outputError above).
    if (!(err instanceof CommanderError)) io.stderr.write(errorLine(err) + '\n');
    return exitCodeFor(err);
  }
}
