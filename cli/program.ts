import { Command, CommanderError, Option } from 'commander';
import { apiCommand } from './commands/api';
import { archiveCommand } from './commands/archive';
import { auditCommand } from './commands/audit';
import { completionCommand } from './commands/completion';
import { configCommand } from './commands/config';
import { demoCommand } from './commands/demo';
import { replayCommand } from './commands/replay';
import { restoreCommand } from './commands/restore';
import { guardCommand } from './commands/guard';
import { iamPolicyCommand } from './commands/iam-policy';
import { expiryIndexCommand } from './commands/expiry-index';
import { runCommand } from './commands/run';
import { schemasCommand } from './commands/schemas';
import { statusCommand } from './commands/status';
import { topicsCommand } from './commands/topics';
import { previewCommand } from './commands/preview';
import { ttlCommand } from './commands/ttl';
import { addOutputOptions, type CommandEnv } from './command-kit';
import { EXIT, errorLine, exitCodeFor } from './exit-codes';
import { processIo, type CliIo } from './io';
import { guardOptionValues } from './option-guard';
import { VERSION } from '../core/version';

/** The whole command tree, writing to `io`. Built fresh per invocation so tests can run it in-process. */
export function buildProgram(env: CommandEnv): Command {
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
    '\nExit codes: 0 ok, 1 failure, 2 usage or configuration error, 3 nothing matched (--fail-if-empty), 4 audit breach.\n' +
      "Configuration: flags (--endpoint-url, --region, --brokers, and each command's own) > TTLSTREAM_* environment\n" +
      "> --config file > a local stack's endpoints.json (only with --local-stack <dir> or TTLSTREAM_LOCAL_STACK) > defaults\n" +
      '(see docs/configuration.md).\n\nExample:\n  $ ttlstream run --roles scanner,producer\n',
  );
  for (const sub of [
    runCommand(env),
    ttlCommand(env),
    previewCommand(env),
    restoreCommand(env),
    replayCommand(env),
    archiveCommand(env),
    auditCommand(env),
    topicsCommand(env),
    guardCommand(env),
    statusCommand(env),
    expiryIndexCommand(env),
    demoCommand(env),
    configCommand(env),
    iamPolicyCommand(env),
    schemasCommand(env),
    apiCommand(env),
    completionCommand(env),
  ]) {
    program.addCommand(inherit(program, sub));
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

/** Runs the CLI and returns the exit code; never throws, never calls process.exit. */
export async function runCli(argv: string[], io: CliIo = processIo()): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram({ io, setExitCode: (c) => (code = c) });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    // Commander has already printed its own errors (through outputError above).
    if (!(err instanceof CommanderError)) io.stderr.write(errorLine(err) + '\n');
    return exitCodeFor(err);
  }
}
