import type { Command } from 'commander';
import { EventEmitter } from 'node:events';
import type { CliIo, OutStream } from '../../cli/kit/io';
import { buildProgram, runCli } from '../../cli/program';

/**
 * The real program run in-process on an in-memory terminal: what the CLI tests (unit, and the integration
 * tests that need no child process) run commands with. No service is touched unless a command reaches for one.
 */

export interface CapturedStream extends OutStream {
  text: string;
  /** The stream fails as a process stream does: an 'error' event (EPIPE when a pipe's reader has left). */
  fail(err: Error): void;
}

function capture(isTTY: boolean): CapturedStream {
  const events = new EventEmitter();
  const stream: CapturedStream = {
    text: '',
    isTTY,
    columns: 100,
    write(chunk: string) {
      stream.text += chunk;
      return true;
    },
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
    fail: (err) => void events.emit('error', err),
  };
  return stream;
}

/** An in-memory terminal (or pipe) for running the real program in-process. */
export function fakeIo(options: { env?: NodeJS.ProcessEnv; tty?: boolean } = {}): CliIo & {
  stdout: CapturedStream;
  stderr: CapturedStream;
} {
  return {
    stdout: capture(options.tty ?? false),
    stderr: capture(options.tty ?? false),
    env: { ...(options.env ?? {}) },
    cwd: process.cwd(),
  };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** How long the command took, in milliseconds. */
  ms: number;
}

/**
 * For commands that are to fail on a service: dummy AWS credentials (no credential chain to wait for) and no
 * "endpoints: ..." line before the first request (program.test.ts and endpoints.test.ts test that line).
 */
export const QUIET_OFFLINE: NodeJS.ProcessEnv = {
  AWS_ACCESS_KEY_ID: 'x',
  AWS_SECRET_ACCESS_KEY: 'x',
  TTLSTREAM_QUIET: '1',
};

/**
 * `ttlstream <args>` in-process with exactly `env` as its environment (none of this process's), on a pipe, in
 * `options.cwd` (default: this process's working directory).
 */
export async function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  options: { cwd?: string } = {},
): Promise<CliRun> {
  const io = fakeIo({ env });
  if (options.cwd !== undefined) io.cwd = options.cwd;
  const started = Date.now();
  const code = await runCli(args, io);
  return { code, stdout: io.stdout.text, stderr: io.stderr.text, ms: Date.now() - started };
}

/** Every command of the program with the words that reach it, the program itself first (path []), depth first. */
export function commandTree(): Array<{ path: string[]; command: Command }> {
  const out: Array<{ path: string[]; command: Command }> = [];
  const walk = (command: Command, path: string[]): void => {
    out.push({ path, command });
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(buildProgram({ io: fakeIo(), setExitCode: () => undefined }), []);
  return out;
}

/** The paths of the commands that run something (those without subcommands), in help order. */
export function leafCommandPaths(): string[][] {
  return commandTree()
    .filter(({ command }) => command.commands.length === 0)
    .map(({ path }) => path);
}
