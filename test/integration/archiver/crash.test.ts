import { basename } from 'node:path';
import { openArchiveStorage } from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { archiverEnv, crashed, untilCommitted } from '../../support/archiver-process';
import { useArchiverSuite } from '../../support/archiver-suite';
import { countIds, makeRecord, produceAll, readArchive, removeMessage } from '../../support/archive-fixture';
import { filesUnder } from '../../support/files';

/**
 * SIGKILL an archiver process at each step of a roll, start a fresh one, and check that every
 * produced eventID is in the archive exactly once and the archive's structure is whole.
 */

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

describe('archiver: SIGKILL at any step loses nothing and duplicates nothing', () => {
  const suite = useArchiverSuite();

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
    const dir = suite.tempDir();
    const topic = await createTestTopic(suite.admin(), `${name}.shared`, 3);
    const env = archiverEnv(name, topic, `file://${dir}`, 24 * 1024);
    const before = Array.from({ length: 600 }, (_, i) =>
      makeRecord(i % 2 ? 'orders' : 'users', i, BASE + i * 7),
    );
    await produceAll(
      suite.producer(),
      topic,
      before.map((r, i) => removeMessage(r, i % 2 ? 'orders' : 'users')),
    );

    const armed = suite.spawn({ ...env, TTLSTREAM_CRASH_AT: crashAt });
    const outcome = await crashed(armed);
    expect(outcome.signal).toBe('SIGKILL');
    expect(armed.stderr()).toContain(`crash point ${crashAt.split('@')[0]}`);
    if (crashAt.startsWith('storage.fs.before-rename'))
      expect(filesUnder(dir).filter((f) => basename(f).startsWith('.tmp-')).length).toBeGreaterThan(0);

    // More records while no archiver runs; then a fresh process takes over.
    const after = Array.from({ length: 200 }, (_, i) => makeRecord('orders', 1000 + i, BASE + i));
    await produceAll(
      suite.producer(),
      topic,
      after.map((r) => removeMessage(r, 'orders')),
    );
    // Other roll boundaries than the crashed process: only an exact redo of the interrupted
    // range (not a re-roll that happens to cut at the same offsets) keeps the archive whole.
    const resumed = suite.spawn({ ...env, TTLSTREAM_ARCHIVE_ROLL_BYTES: String(56 * 1024) });
    expect(await untilCommitted(resumed, suite.admin(), `${name}-archiver`, topic)).toEqual({
      code: 0,
      signal: null,
    });

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
