import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A lock between test runs (jest processes) on one machine: the file `file` holds the holder's pid. Resolves with the
 * release once this process holds it; a lock whose holder process is gone is taken over. Fails after `timeoutMs`,
 * naming `what` and the holder.
 */
export async function holdFileLock(file: string, what: string, timeoutMs = 600_000): Promise<() => void> {
  mkdirSync(dirname(file), { recursive: true });
  const mine = String(process.pid);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      writeFileSync(file, mine, { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
        } catch {
          // Gone already.
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(file, 'utf8'));
    } catch {
      continue; // released meanwhile
    }
    if (!processAlive(holder)) {
      try {
        unlinkSync(file);
      } catch {
        // Another waiter took it over first.
      }
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(`${what} is held by process ${holder} (${file}) for more than ${timeoutMs} ms`);
    await sleep(500);
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
