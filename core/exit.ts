/**
 * The one way a ttlstream process ends itself. `process.exit` drops what stdout and stderr still hold: on Linux a
 * pipe is written asynchronously, so `ttlstream archive query … | jq` received 64 KiB of a 2.6 MB answer and the
 * command said 0. Every entry point (the CLI, the bare archiver, the benches) exits through here: the code is set, and
 * the process ends once both streams have handed every byte written before this call to the operating system (or
 * failed: a reader that left cannot be waited for). It never ends sooner, however slow the reader.
 */
export function exitAfterOutput(
  code: number | (() => number),
  streams: ReadonlyArray<NodeJS.WritableStream & { destroyed?: boolean }> = [process.stdout, process.stderr],
  exit: (code: number) => void = (c) => process.exit(c), // eslint-disable-line no-restricted-properties
): void {
  // A function is asked once the output is out: a reader that left during the wait changes the status.
  const finalCode = (): number => (typeof code === 'number' ? code : code());
  if (typeof code === 'number') process.exitCode = code;
  let pending = streams.length;
  const written = (): void => {
    pending -= 1;
    // A failed write calls back before its stream emits 'error' (on the next tick): the status is asked after that.
    if (pending === 0) setImmediate(() => exit(finalCode()));
  };
  if (pending === 0) return exit(finalCode());
  // A stream writes in order: the callback of an empty write runs once every earlier write has completed, or with the
  // error that ended the stream.
  for (const stream of streams) {
    if (stream.destroyed === true) written();
    else stream.write('', () => written());
  }
}

/** True for the error a write gets when the stream's reader has gone (EPIPE; ECONNRESET on a socket). */
export function isReaderGone(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return code === 'EPIPE' || code === 'ECONNRESET';
}
