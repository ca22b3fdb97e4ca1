import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { nodeArgsFor } from '../../support/entrypoints';

const ROOT = resolve(__dirname, '..', '..', '..');

export interface ArchiverProcess {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/**
 * A bare archiver process (archiver/main.ts) with `env` on top of this one's. `node --import tsx`
 * rather than the tsx binary: a crash point must kill the archiver itself, not a wrapper's child.
 */
export function spawnArchiver(env: Record<string, string>): ArchiverProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!env.TTLSTREAM_CRASH_AT) delete childEnv.TTLSTREAM_CRASH_AT;
  const child = spawn(process.execPath, nodeArgsFor('archiver'), {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  child.stdout?.resume();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.on('exit', (code, signal) => res({ code, signal })),
  );
  return { child, exit, stderr: () => err };
}
