#!/usr/bin/env node
import { enableCompileCache } from 'node:module';
import { unsupportedNodeLine } from './node-version';

/** The `ttlstream` binary. Long-running commands resolve when their shutdown is complete. */
// First of all: on an older Node.js, one line and exit 2 (EXIT.usage, as for a bad setting; cli/exit-codes.ts is not
// imported here so that nothing but this check runs first), before an API it lacks fails with a stack trace.
const refusal = unsupportedNodeLine(process.version, process.execPath);
if (refusal !== undefined) {
  process.stderr.write(refusal + '\n');
  process.exit(2);
}
// A command loads MB of JavaScript (zod; the AWS SDK and kafkajs once it makes a client): V8's code cache on disk
// (os.tmpdir()/node-compile-cache) saves about a quarter of each start's CPU. It must be on before the program is
// loaded, hence the import() below. A directory that cannot be written just leaves it off;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off.
enableCompileCache();
// kafkajs announces its v2 partitioner change on every producer; ttlstream uses the default (murmur2) on purpose.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
// `ttlstream archive show … | head`: the reader left; stop quietly instead of crashing on EPIPE.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

// The log reader left (`… 2>&1 | tee log`, tee killed): nobody can read an error about it; carry on
// without logs so signals and the shutdown bound still work (core/logger.ts stops writing).
process.stderr.on('error', () => undefined);

import('./program')
  .then(({ runCli }) => runCli(process.argv.slice(2)))
  .then(
    (code) => {
      // Open sockets or timers of a half-stopped client must not keep a finished command alive.
      process.exit(code);
    },
    (err: unknown) => {
      process.stderr.write(`ttlstream: ${(err as Error)?.message ?? String(err)}\n`);
      process.exit(1);
    },
  );
