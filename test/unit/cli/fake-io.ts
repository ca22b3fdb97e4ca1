import type { CliIo, OutStream } from '../../../cli/io';

export interface CapturedStream extends OutStream {
  text: string;
}

function capture(isTTY: boolean): CapturedStream {
  const stream: CapturedStream = {
    text: '',
    isTTY,
    columns: 100,
    write(chunk: string) {
      stream.text += chunk;
      return true;
    },
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
