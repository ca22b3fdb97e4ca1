#!/usr/bin/env node
import { runCli } from './program';

/** The `ttlstream` binary. Long-running commands resolve when their shutdown is complete. */
runCli(process.argv.slice(2)).then(
  (code) => {
    // Open sockets or timers of a half-stopped client must not keep a finished command alive.
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`ttlstream: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(1);
  },
);
