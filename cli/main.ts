#!/usr/bin/env node
import { enableCompileCache } from 'node:module';
import { exitAfterOutput, isReaderGone } from '../core/exit';
import { signalExitCode } from './kit/interrupt';
import { unsupportedNodeLine } from './kit/node-version';

/**
 * The `ttlstream` binary. Long-running commands resolve when their shutdown is complete. It ends in one place,
 * `exitAfterOutput`, which waits until stdout and stderr have passed on everything written: output through a pipe
 * arrives whole, with the command's exit code.
 */
// First of all: on an older Node.js, one line and exit 2 (EXIT.usage, as for a bad setting; cli/kit/exit-codes.ts is not
// imported here so that nothing but this check runs first), before an API it lacks fails with a stack trace.
const refusal = unsupportedNodeLine(process.version, process.execPath);
if (refusal !== undefined) {
  process.stderr.write(refusal + '\n');
  exitAfterOutput(2);
} else {
  start();
}

function start(): void {
  // A command loads MB of JavaScript (zod; the AWS SDK and kafkajs once it makes a client): V8's code cache on disk
  // (os.tmpdir()/node-compile-cache) saves about a quarter of each start's CPU. It must be on before the program is
  // loaded, hence the import() below. A directory that cannot be written just leaves it off;
  // NODE_DISABLE_COMPILE_CACHE=1 turns it off.
  enableCompileCache();
  // kafkajs announces its v2 partitioner change on every producer; ttlstream uses the default (murmur2) on purpose.
  process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
  // `ttlstream archive show … | head`: the reader left. The running command is told (cli/kit/interrupt.ts watchSignals)
  // and stops as on Ctrl-C; the process then ends with SIGPIPE's status, without a stack trace. Any other failure of
  // stdout loses output just the same, and is said.
  let outputLost: Error | undefined;
  process.stdout.on('error', (err: Error) => {
    outputLost ??= err;
  });
  // The log reader left (`… 2>&1 | tee log`, tee killed): nobody can read an error about it; carry on
  // without logs so signals and the shutdown bound still work (core/logger.ts stops writing).
  process.stderr.on('error', () => undefined);

  /** The command's code, unless stdout failed under a command that would otherwise have succeeded. */
  const finalCode = (code: number): number => {
    if (code !== 0 || outputLost === undefined) return code;
    if (isReaderGone(outputLost)) return signalExitCode('SIGPIPE');
    process.stderr.write(`ttlstream: writing stdout failed: ${outputLost.message}\n`);
    return 1;
  };

  import('./program')
    .then(({ runCli }) => runCli(process.argv.slice(2)))
    .then(
      // Open sockets or timers of a half-stopped client must not keep a finished command alive: the process ends
      // once its output is out, not when the event loop empties.
      (code) => exitAfterOutput(() => finalCode(code)),
      (err: unknown) => {
        process.stderr.write(`ttlstream: ${err instanceof Error ? err.message : String(err)}\n`);
        exitAfterOutput(1);
      },
    );
}
