import { Command, InvalidArgumentError, Option } from 'commander';
import type { ConfigInput } from '../../core/config';
import { TtlstreamError, ValidationError } from '../../core/errors';
import type { CliContext, GlobalOptions } from './context';
import { EXIT, UsageError } from './exit-codes';
import type { CliIo } from './io';
import { signalExitCode, watchSignals } from './interrupt';

/** What every command gets from the program: where to write, and where to put its exit code. */
export interface CommandEnv {
  io: CliIo;
  /** Set by commands that finish without throwing but must not exit 0 (e.g. a failed demo stage). */
  setExitCode(code: number): void;
}

export interface ActionOptions {
  longRunning?: boolean;
  /** Log level of a one-shot command when none is asked for (default warn). */
  quietLevel?: string;
  overrides?: (opts: Record<string, unknown>) => ConfigInput | Promise<ConfigInput>;
}

/**
 * Wraps a command's action: builds its context from the global options, runs it, and always closes
 * what it opened. A returned number is the exit code. Command files import only commander and light
 * helpers at the top; what an action needs (SDK clients, the pipeline) it imports when it runs.
 */
export function action<O extends object>(
  env: CommandEnv,
  fn: (ctx: CliContext, opts: O, command: Command) => Promise<number | void>,
  options: ActionOptions = {},
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const opts = command.opts<O>();
    normalizeOutput(opts as { json?: boolean; output?: string });
    const globals = command.optsWithGlobals<GlobalOptions>();
    // Loaded on use, so `--help` and usage errors never pay for the service SDKs.
    const { CliContext, connectionOverrides } = await import('./context');
    const ctx = new CliContext(
      env.io,
      {
        ...(globals.config ? { config: globals.config } : {}),
        ...(globals.logLevel ? { logLevel: globals.logLevel } : {}),
        ...(globals.localStack !== undefined ? { localStack: globals.localStack } : {}),
        ...(globals.quiet ? { quiet: true } : {}),
        // A command's own `--env-file` (iam-policy, config): read like the environment.
        ...(globals.envFile !== undefined ? { envFile: globals.envFile } : {}),
      },
      options.longRunning ?? false,
      {
        // A command's own overrides (archive.url, producer.dryRun) never touch the connection settings.
        ...connectionOverrides(globals),
        ...((await options.overrides?.(opts as Record<string, unknown>)) ?? {}),
      },
      options.quietLevel,
    );
    // `run` has its own graceful shutdown; every other command stops on the first signal, restores the
    // terminal and says what it did (ctx.onInterrupt), rather than dying with the cursor hidden.
    const signals = options.longRunning ? undefined : watchSignals(undefined, env.io.stdout);
    try {
      const work = fn(ctx, opts, command).then((code) => ({ code }));
      const outcome = signals
        ? await Promise.race([work, signals.received.then((signal) => ({ signal }))])
        : await work;
      if ('signal' in outcome) {
        // The abandoned work may still fail as its clients close; the process exits with the signal's code.
        work.catch(() => undefined);
        ctx.interrupted(outcome.signal);
        env.setExitCode(signalExitCode(outcome.signal));
      } else if (typeof outcome.code === 'number') env.setExitCode(outcome.code);
    } catch (err) {
      throw await ctx.explain(err);
    } finally {
      signals?.dispose();
      await ctx.close();
    }
  };
}

/** Adapts a parser throwing our ValidationError to commander's, so bad flag values exit 2 with commander's wording. */
export function argParser<T>(parse: (value: string) => T): (value: string) => T {
  return (value: string) => {
    try {
      return parse(value);
    } catch (err) {
      if (err instanceof TtlstreamError) throw new InvalidArgumentError(err.message);
      throw err;
    }
  };
}

/** A positive whole number (a limit, a count, a rate), for `argParser`: commander's error names the flag. */
export function positiveInt(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || !Number.isSafeInteger(n))
    throw new ValidationError(`expected a positive whole number, got "${text}"`);
  return n;
}

export function jsonOption(): Option {
  return new Option('--json', 'machine-readable JSON on stdout (same as --output json)');
}

/** The output formats of `--output`; table and text are today the same human-readable output. */
export const OUTPUT_FORMATS = ['json', 'table', 'text'] as const;

/**
 * `--output json|table|text` (the aws cli's spelling) on every command that has `--json`, added once
 * for the whole tree rather than per command; `--json` stays as its alias.
 */
export function addOutputOptions(command: Command): void {
  // A command with an --output of its own (audit's adds csv) keeps it.
  const has = (flag: string) => command.options.some((o) => o.long === flag);
  if (has('--json') && !has('--output')) {
    command.addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS));
  }
  for (const sub of command.commands) addOutputOptions(sub);
}

/** --output json means --json; --json with another --output is a contradiction (exit 2). */
function normalizeOutput(opts: { json?: boolean; output?: string }): void {
  if (opts.output === undefined) return;
  if (opts.json && opts.output !== 'json') {
    throw new UsageError(`--json contradicts --output ${opts.output}`);
  }
  if (opts.output === 'json') opts.json = true;
}

export function example(command: Command, ...lines: string[]): Command {
  return command.addHelpText(
    'after',
    `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`,
  );
}

export function failIfEmptyOption(): Option {
  return new Option(
    '--fail-if-empty',
    `exit ${EXIT.empty} when nothing matched (scripts: tell "nothing to do" from success)`,
  );
}
