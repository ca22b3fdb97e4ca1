import { CommanderError } from 'commander';
import { ERROR_CODES, type ErrorCode } from '../../core/error-codes';
import { TtlstreamError, ValidationError } from '../../core/errors';

/**
 * The CLI's exit codes: scripts branch on these, so they are part of the interface. `breach`: `audit` found a
 * deletion later than the SLA or an expired item still present (a compliance job alerts on it).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, empty: 3, breach: 4 } as const;

/** Commander's own codes that mean "the command line was wrong". */
const USAGE_CODES = new Set([
  'commander.unknownOption',
  'commander.unknownCommand',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.conflictingOption',
  'commander.excessArguments',
  'commander.invalidArgument',
  'commander.help', // help printed because a required subcommand was missing (exit code 1 from commander)
]);

/** A command line that parses but makes no sense (e.g. --key together with --key-prefix). */
export class UsageError extends ValidationError {
  static override readonly code: ErrorCode = 'TTLSTREAM_USAGE';
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
    // `ttlstream help <cmd>` asks for help (exit code 0); a group without its subcommand shows help as an error.
    if (err.code === 'commander.help' && err.exitCode === 0) return EXIT.ok;
    return USAGE_CODES.has(err.code) ? EXIT.usage : err.exitCode === 0 ? EXIT.ok : EXIT.failure;
  }
  // The class decides (its code's `exit` in core/error-codes.ts): a bad setting or argument is a usage error.
  if (err instanceof TtlstreamError && ERROR_CODES[err.code].exit === 'usage') return EXIT.usage;
  // A wrapper (e.g. "archiver failed to start: …") around a bad setting is still a configuration error.
  if (err instanceof Error && err.cause !== undefined) return exitCodeFor(err.cause);
  return EXIT.failure;
}

/** One line, no stack: operators read it, scripts grep it. Details go to the debug log. */
export function errorLine(err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  const flat = raw
    .replace(/^error:\s*/i, '')
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .join(' ');
  return `ttlstream: ${flat || (err instanceof Error ? err.name : 'unknown error')}`;
}
