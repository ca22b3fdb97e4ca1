import type { Admin } from 'kafkajs';
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { allCommitted } from './archive-fixture';
import { waitFor } from './wait-for';
import { nodeArgsFor } from './entrypoints';

const ROOT = resolve(__dirname, '..', '..');

export interface ArchiverProcess {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/**
 * A bare archiver process (archiver/main.ts) with `env` on top of this one's. `node` itself (entrypoints.ts)
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

/**
 * The environment of an archiver process of test `name` reading `topic` into the archive at `url`: its own group
 * and topic names, rolls of `rollBytes` or 400 ms, a 6 s session so a killed member's partitions move on soon.
 */
export function archiverEnv(
  name: string,
  topic: string,
  url: string,
  rollBytes: number,
): Record<string, string> {
  return {
    TTLSTREAM_ARCHIVE_URL: url,
    TTLSTREAM_ARCHIVE_GROUP_ID: `${name}-archiver`,
    TTLSTREAM_TOPICS_SHARED: topic,
    TTLSTREAM_TOPICS_PER_TABLE_PREFIX: `${name}.t.`,
    TTLSTREAM_TOPICS_DEAD_LETTER: `${name}.dlq`,
    TTLSTREAM_ARCHIVE_ROLL_BYTES: String(rollBytes),
    TTLSTREAM_ARCHIVE_ROLL_MS: '400',
    TTLSTREAM_LOG_LEVEL: 'warn',
    TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS: '6000',
  };
}

/**
 * Lets `archiver` run until group `groupId` has committed all of `topic` (within 90 s), then stops it with SIGTERM
 * and returns how it exited.
 */
export async function untilCommitted(
  archiver: ArchiverProcess,
  admin: Admin,
  groupId: string,
  topic: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  try {
    await waitFor('everything archived and committed', () => allCommitted(admin, groupId, topic), 90_000);
  } finally {
    archiver.child.kill('SIGTERM');
  }
  return archiver.exit;
}

/** How an archiver armed with a crash point ended; fails if it has not ended within 90 s. */
export function crashed(
  archiver: ArchiverProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return Promise.race([
    archiver.exit,
    new Promise<never>((_, rej) =>
      setTimeout(() => rej(new Error('the crash point was never reached')), 90_000).unref(),
    ),
  ]);
}
