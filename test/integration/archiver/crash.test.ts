import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Admin, Producer } from 'kafkajs';
import { openArchiveStorage } from '../../../archiver/storage';
import { verifyArchive } from '../../../archiver/verify';
import { createKafka } from '../../../core/clients';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import {
  committedOffsets,
  countIds,
  highWatermarks,
  makeRecord,
  produceAll,
  readArchive,
  removeMessage,
  waitFor,
} from './fixtures';
import { nodeArgsFor } from '../../support/entrypoints';

/**
 * SIGKILL an archiver process at each step of a roll, start a fresh one, and check that every
 * produced eventID is in the archive exactly once and the archive's structure is whole.
 */

const ROOT = resolve(__dirname, '..', '..', '..');
/**
 * Which hit of each crash point kills the process: random 1..6 per run (so CI runs crash at different rolls and
 * files of the same steps), printed for a replay with TTLSTREAM_TEST_CRASH_HIT.
 */
const HIT = crashHit(process.env.TTLSTREAM_TEST_CRASH_HIT);
console.log(`[crash] archiver crash hit ${HIT} (replay with TTLSTREAM_TEST_CRASH_HIT=${HIT})`);

function crashHit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1 + Math.floor(Math.random() * 6);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 6)
    throw new Error(`TTLSTREAM_TEST_CRASH_HIT: "${raw}" is not an integer 1..6`);
  return n;
}
const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

interface Run {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

function spawnArchiver(env: Record<string, string>): Run {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!env.TTLSTREAM_CRASH_AT) delete childEnv.TTLSTREAM_CRASH_AT;
  // `node --import tsx` rather than the tsx binary: the crash must kill the archiver process
  // itself, not a child of a wrapper.
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

function findTmpFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...findTmpFiles(join(dir, e.name)));
    else if (e.name.startsWith('.tmp-')) out.push(join(dir, e.name));
  }
  return out;
}

describe('archiver: SIGKILL at any step loses nothing and duplicates nothing', () => {
  const kafka = createKafka(testConfig());
  let admin: Admin;
  let producer: Producer;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    admin = kafka.admin();
    producer = kafka.producer({ idempotent: true });
    await Promise.all([admin.connect(), producer.connect()]);
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all([admin.disconnect(), producer.disconnect()]);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it.each([
    ['mid-file (data written, not yet renamed into place)', `storage.fs.before-rename@${HIT}`],
    ['after the manifest says writing', `archiver.after-manifest-writing@${HIT}`],
    ['after the data files', `archiver.after-data-files@${HIT}`],
    ['after the key indexes', `archiver.after-index-files@${HIT}`],
    ['after the manifest says complete', `archiver.after-manifest-complete@${HIT}`],
    ['before the offset commit', `archiver.before-commit@${HIT}`],
    ['right after the offset commit', `archiver.after-commit@${HIT}`],
  ])('crash %s', async (_label, crashAt) => {
    const name = uniqueName('arch-crash');
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-archive-'));
    dirs.push(dir);
    const topic = await createTestTopic(admin, `${name}.shared`, 3);
    const env = {
      TTLSTREAM_ARCHIVE_URL: `file://${dir}`,
      TTLSTREAM_ARCHIVE_GROUP_ID: `${name}-archiver`,
      TTLSTREAM_TOPICS_SHARED: topic,
      TTLSTREAM_TOPICS_PER_TABLE_PREFIX: `${name}.t.`,
      TTLSTREAM_TOPICS_DEAD_LETTER: `${name}.dlq`,
      TTLSTREAM_ARCHIVE_ROLL_BYTES: String(24 * 1024),
      TTLSTREAM_ARCHIVE_ROLL_MS: '400',
      TTLSTREAM_LOG_LEVEL: 'warn',
      TTLSTREAM_ARCHIVER_SESSION_TIMEOUT_MS: '6000',
    };
    const before = Array.from({ length: 600 }, (_, i) =>
      makeRecord(i % 2 ? 'orders' : 'users', i, BASE + i * 7),
    );
    await produceAll(
      producer,
      topic,
      before.map((r, i) => removeMessage(r, i % 2 ? 'orders' : 'users')),
    );

    const crashed = spawnArchiver({ ...env, TTLSTREAM_CRASH_AT: crashAt });
    children.push(crashed.child);
    const outcome = await Promise.race([
      crashed.exit,
      new Promise<never>((_, rej) =>
        setTimeout(() => rej(new Error('the crash point was never reached')), 90_000).unref(),
      ),
    ]);
    expect(outcome.signal).toBe('SIGKILL');
    expect(crashed.stderr()).toContain(`crash point ${crashAt.split('@')[0]}`);
    if (crashAt.startsWith('storage.fs.before-rename')) expect(findTmpFiles(dir).length).toBeGreaterThan(0);

    // More records while no archiver runs; then a fresh process takes over.
    const after = Array.from({ length: 200 }, (_, i) => makeRecord('orders', 1000 + i, BASE + i));
    await produceAll(
      producer,
      topic,
      after.map((r) => removeMessage(r, 'orders')),
    );
    // Other roll boundaries than the crashed process: only an exact redo of the interrupted
    // range (not a re-roll that happens to cut at the same offsets) keeps the archive whole.
    const resumed = spawnArchiver({ ...env, TTLSTREAM_ARCHIVE_ROLL_BYTES: String(56 * 1024) });
    children.push(resumed.child);
    try {
      await waitFor(
        'everything archived and committed',
        async () => {
          const c = await committedOffsets(admin, env.TTLSTREAM_ARCHIVE_GROUP_ID, topic);
          const h = await highWatermarks(admin, topic);
          return [...h].every(([p, o]) => c.get(p) === o);
        },
        90_000,
      );
    } finally {
      resumed.child.kill('SIGTERM');
    }
    expect(await resumed.exit).toEqual({ code: 0, signal: null });

    const storage = openArchiveStorage(testConfig({ archive: { url: `file://${dir}` } }));
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    // The redone roll is sealed and linked like any other: the hash chain still verifies.
    const verified = await verifyArchive(storage);
    expect(verified.findings).toEqual([]);
    expect(verified.rows).toBe(before.length + after.length);
    const ids = countIds(archive.rows);
    const all = [...before, ...after];
    const wrong = all
      .filter((r) => ids.get(r.eventID) !== 1)
      .map((r) => `${r.eventID}: ${ids.get(r.eventID) ?? 0}`);
    expect(wrong).toEqual([]);
    expect(ids.size).toBe(all.length);
  });
});
