import { rmSync } from 'node:fs';
import { openCatalog } from '../../../archive/catalog';
import {
  ERASE_DIR,
  ERASURE_DIR,
  indexPathFor,
  openArchiveStorage,
  type ArchiveStorage,
} from '../../../archive/storage';
import { fileDueForPurge, retentionCutoffMs } from '../../../archive/retention/policy';
import { verifyArchive } from '../../../archive-tools/verify';
import { recordsOfFile } from '../../../cli/archive/files';
import { keyDigest, type StreamRecord } from '../../../schemas';
import { createTestArchive, testConfig, uniqueName } from '../../support/stack';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli, spawnCli } from '../../support/cli-process';
import { SUBJECT, SUBJECT_JSON, seedErasable } from './erase-fixtures.support';
import { countIds, readArchive } from '../../support/archive-fixture';

/**
 * `archive erase` through the real CLI on both backends: dry run, erasure, idempotent rerun,
 * SIGKILL at each step then a rerun, and verify catching tampering of a rewritten generation.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Seeded {
  url: string;
  storage: ArchiveStorage;
  records: StreamRecord[];
  /** eventIDs of the subject's users records (to go) and of every other record (to stay). */
  erased: string[];
  kept: string[];
}

async function seeded(backend: 'fs' | 's3', prefix: string): Promise<Seeded> {
  const url = await createTestArchive(backend, uniqueName(prefix), dirs);
  const storage = openArchiveStorage(testConfig({ archive: { url } }));
  const records = await seedErasable(storage);
  const isErased = (r: StreamRecord, i: number): boolean =>
    i % 2 === 0 && r.dynamodb.Keys.pk?.S === 'subject-42';
  return {
    url,
    storage,
    records,
    erased: records.filter(isErased).map((r) => r.eventID),
    kept: records.filter((r, i) => !isErased(r, i)).map((r) => r.eventID),
  };
}

async function snapshot(storage: ArchiveStorage): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const p of storage.list('')) out.set(p, (await storage.get(p))?.toString('base64') ?? '');
  return out;
}

/** Every record that must stay is in the archive exactly once; none of the erased ones is. */
async function expectOnlyErasedGone(s: Seeded): Promise<void> {
  const archive = await readArchive(s.storage);
  const ids = countIds(archive.rows);
  expect(s.kept.filter((id) => ids.get(id) !== 1)).toEqual([]);
  expect(s.erased.filter((id) => ids.has(id))).toEqual([]);
}

/** Through the catalog (restore, replay, archive show and audit read there), the key is gone. */
async function expectHidden(s: Seeded): Promise<void> {
  const catalog = openCatalog(s.storage);
  expect(await catalog.findVersions('users', SUBJECT)).toEqual([]);
  const seen: string[] = [];
  for await (const row of catalog.scan('users')) seen.push(row.eventID);
  expect(s.erased.filter((id) => seen.includes(id))).toEqual([]);
  // The same key in another table is another item.
  expect(await catalog.findVersions('orders', SUBJECT)).toHaveLength(1);
}

const erase = (url: string, ...extra: string[]): string[] => [
  'archive',
  'erase',
  '--archive',
  url,
  '--table',
  'users',
  '--key',
  SUBJECT_JSON,
  '--reason',
  'ticket DSR-7',
  ...extra,
];

/**
 * The suites of `archive erase` for the given backends (one test file per backend, so the two run side by side),
 * and the backend-independent Ctrl-C case where `withSigint`.
 */
export function eraseSuites(backends: readonly ('fs' | 's3')[], withSigint: boolean): void {
  describe.each(backends)('archive erase (%s)', (backend) => {
    it('dry run writes nothing; erase rewrites the files, records the digest only, verifies, and a rerun is a no-op', async () => {
      const s = await seeded(backend, `erase-${backend}`);
      const before = await snapshot(s.storage);

      const dry = await runCli([...erase(s.url), '--dry-run', '--json'], {});
      expect(dry.code).toBe(0);
      const planned = JSON.parse(dry.stdout) as { files: unknown[]; rowsRemoved: number; dryRun: boolean };
      expect(planned).toMatchObject({ dryRun: true, rowsRemoved: 4 });
      expect(planned.files).toHaveLength(4);
      expect(await snapshot(s.storage)).toEqual(before);

      const done = await runCli(erase(s.url), {});
      expect(done.code).toBe(0);
      expect(done.stdout).toContain('erased 1 key(s) of users: rewrote 4 file(s), 4 row(s) removed');
      await expectOnlyErasedGone(s);
      await expectHidden(s);

      // The ledger holds the digest, the reason and the actor, never the key.
      const digest = keyDigest('users', SUBJECT);
      const ledger: string[] = [];
      for await (const p of s.storage.list(`${ERASURE_DIR}/`)) ledger.push(p);
      expect(ledger).toEqual([`${ERASURE_DIR}/users/${digest}.json`]);
      const entry = JSON.parse((await s.storage.get(ledger[0] as string))?.toString() ?? '{}') as Record<
        string,
        unknown
      >;
      expect(entry).toMatchObject({ digest, state: 'done', rowsRemoved: 4, reason: 'ticket DSR-7' });
      expect(entry.files).toHaveLength(4);
      for await (const p of s.storage.list(`${ERASE_DIR}/`))
        expect((await s.storage.get(p))?.toString()).not.toContain('subject-42');
      expect(JSON.stringify(entry)).not.toContain('subject-42');

      const report = await verifyArchive(s.storage);
      expect(report.findings).toEqual([]);
      expect(report).toMatchObject({ erased: 4, eraseInProgress: [], rows: s.kept.length });
      const verified = await runCli(['archive', 'verify', '--archive', s.url, '--json'], {});
      expect(verified.code).toBe(0);

      const again = await runCli([...erase(s.url), '--json'], {});
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ files: [], rowsRemoved: 0, finished: 0 });
      expect((await verifyArchive(s.storage)).findings).toEqual([]);

      // archive show of the table and of the key: nothing of the subject.
      const shown = await runCli(
        ['archive', 'show', '--archive', s.url, '--table', 'users', '--json', '--limit', '1000'],
        {},
      );
      expect(shown.code).toBe(0);
      expect(shown.stdout).not.toContain('subject-42');
      expect(shown.stdout.trim().split('\n')).toHaveLength(s.kept.length - 15);

      // Tampering with a rewritten generation is still caught.
      const generation = [...(await snapshot(s.storage)).keys()].find((k) => k.endsWith('~1.avro')) as string;
      const body = (await s.storage.get(generation)) as Buffer;
      await s.storage.put(generation, Buffer.concat([body, Buffer.from('x')]));
      const tampered = await runCli(['archive', 'verify', '--archive', s.url, '--json'], {});
      expect(tampered.code).toBe(1);
      expect(JSON.parse(tampered.stdout)).toMatchObject({
        ok: false,
        findings: [{ kind: 'altered-file', path: generation }],
      });
      await s.storage.delete(generation);
      await s.storage.delete(indexPathFor(generation));
      const kinds = (await verifyArchive(s.storage)).findings.map((f) => f.kind).sort();
      expect(kinds).toEqual(['missing-file', 'missing-index']);
    });

    it.each([
      'erase.after-ledger',
      'erase.after-record@2',
      'erase.after-data@2',
      'erase.after-index@2',
      'erase.after-old-index@3',
      'erase.after-old-data@1',
    ])('SIGKILL at %s, then a rerun: verifies, only the erased rows are gone', async (crashAt) => {
      const s = await seeded(backend, `erasek-${backend}`);
      const crashed = await runCli(erase(s.url), { TTLSTREAM_CRASH_AT: crashAt });
      expect(crashed.signal).toBe('SIGKILL');
      expect(crashed.stderr).toContain(`crash point ${crashAt.split('@')[0]}`);

      // Mid-way: the ledger is written first, so readers already hide the key; the archive verifies.
      const mid = await verifyArchive(s.storage);
      expect(mid.findings).toEqual([]);
      // A file caught between its record and the removal of its old generation is an erasure in progress.
      expect(mid.eraseInProgress.length > 0).toBe(!/after-(ledger|old-data)/.test(crashAt));
      await expectHidden(s);
      const ids = countIds((await readArchive(s.storage)).rows);
      expect(s.kept.filter((id) => (ids.get(id) ?? 0) < 1)).toEqual([]);
      // `archive show <file>` of any file left, superseded generations included, hides the key too.
      for await (const p of s.storage.list('table=users/'))
        if (p.endsWith('.avro'))
          expect((await recordsOfFile(s.storage, p)).filter((r) => s.erased.includes(r.eventID))).toEqual([]);

      const rerun = await runCli([...erase(s.url), '--json'], {});
      expect(rerun.code).toBe(0);
      const after = await verifyArchive(s.storage);
      expect(after.findings).toEqual([]);
      expect(after.eraseInProgress).toEqual([]);
      expect(after.erased).toBe(4);
      await expectOnlyErasedGone(s);
      await expectHidden(s);
      const entry = JSON.parse(
        (await s.storage.get(`${ERASURE_DIR}/users/${keyDigest('users', SUBJECT)}.json`))?.toString() ?? '{}',
      ) as Record<string, unknown>;
      expect(entry).toMatchObject({ state: 'done', rowsRemoved: 4 });
    });
  });

  if (withSigint)
    describe('archive erase and SIGINT', () => {
      it('Ctrl-C between two steps of a file: exit 130 with a summary, the archive verifies, a rerun finishes', async () => {
        const s = await seeded('fs', 'erase-int');
        // Frozen right after the second file's new data is written, then interrupted there.
        const child = spawnCli(erase(s.url), { TTLSTREAM_CRASH_AT: 'erase.after-data@2:stop' });
        const watchdog = setTimeout(() => child.kill('SIGKILL'), 60_000);
        try {
          while (!/stop point erase.after-data/.test(child.output()) && child.exitCode === null)
            await sleep(50);
          child.kill('SIGINT');
          child.kill('SIGCONT');
          const r = await child.result;
          expect(r.code).toBe(130);
          expect(r.stdout).toContain('archive erase interrupted (SIGINT)');
          expect(r.stdout).toContain('run the same command again to finish');
        } finally {
          clearTimeout(watchdog);
        }
        expect((await verifyArchive(s.storage)).findings).toEqual([]);
        await expectHidden(s);
        const rerun = await runCli(erase(s.url), {});
        expect(rerun.code).toBe(0);
        const after = await verifyArchive(s.storage);
        expect(after.findings).toEqual([]);
        expect(after.eraseInProgress).toEqual([]);
        await expectOnlyErasedGone(s);
      });
    });

  describe.each(backends)('purge of erased files (%s)', (backend) => {
    it('SIGKILL at purge.after-index on a rewritten generation, then a rerun: every generation goes, verify passes', async () => {
      const s = await seeded(backend, `erasep-${backend}`);
      expect((await runCli(erase(s.url), {})).code).toBe(0);
      const env = { TTLSTREAM_ARCHIVE_RETENTION_DAYS: '1' };
      // Files due before the purge starts are due when it runs.
      const cutoff = retentionCutoffMs(Date.now(), 1);
      const rewritten: string[] = [];
      for await (const p of s.storage.list(`${ERASE_DIR}/`))
        rewritten.push(p.slice(ERASE_DIR.length + 1, -'.json'.length));
      const due = rewritten.filter((f) => fileDueForPurge(f, cutoff));
      expect(due.length).toBeGreaterThan(0);
      expect(due.length).toBeLessThan(rewritten.length);
      const crashed = await runCli(['archive', 'purge', '--archive', s.url], {
        ...env,
        TTLSTREAM_CRASH_AT: 'purge.after-index@2',
      });
      expect(crashed.signal).toBe('SIGKILL');
      const mid = await verifyArchive(s.storage);
      expect(mid.findings).toEqual([]);
      const rerun = await runCli(['archive', 'purge', '--archive', s.url, '--json'], env);
      expect(rerun.code).toBe(0);
      const after = await verifyArchive(s.storage);
      expect(after.findings).toEqual([]);
      expect(after.purgeInProgress).toEqual([]);
      expect(after.purged).toBeGreaterThan(2);
      // The rewritten files past the retention are gone with all their generations, each with its purge record.
      for (const f of due) {
        const generations: string[] = [];
        for await (const p of s.storage.list(f.slice(0, -'.avro'.length))) generations.push(p);
        expect(generations).toEqual([]);
        expect(await s.storage.get(`_purge/${f}.json`)).not.toBeNull();
      }
      const left = (await snapshot(s.storage)).keys();
      const dataLeft = [...left].filter((k) => k.endsWith('.avro'));
      expect(dataLeft.length).toBe(after.files - after.purged);
      const ids = countIds((await readArchive(s.storage)).rows);
      expect(s.erased.filter((id) => ids.has(id))).toEqual([]);
      expect(after.rows).toBe(ids.size);
    });
  });
}
