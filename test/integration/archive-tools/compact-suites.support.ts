import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openCatalog } from '../../../archive/catalog';
import { queryArchive } from '../../../archive-tools/query/query';
import {
  openArchiveStorage,
  parseDataFilePath,
  parseDayIndexPath,
  type ArchiveStorage,
} from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import { runCli } from '../../support/cli-process';
import { catalogCounts, folderCounts, notOnce, seedHours } from '../../support/compaction';
import { createTestArchive, testConfig, uniqueName } from '../../support/stack';

/**
 * `archive compact` through the real CLI on one backend: a dry run writes nothing; then a SIGKILL at each step of a
 * compaction, each run picking up where the one before was killed (so every step of recovery is killed too), with
 * the archive checked after each kill: `archive verify` finds nothing, every reader (the catalog that restore,
 * replay, audit and `archive show` read through, `archive query`) sees each record once, and an engine reading the
 * hour folders never sees one twice. A last run finishes, and verify then catches a flipped byte, a missing and an
 * extra compacted file; a key look-up and an erasure then go through the day key index.
 */

const STEPS = [
  'compact.after-record',
  'compact.after-staged',
  'compact.after-index',
  'compact.after-old-index',
  'compact.after-old-data',
  'compact.after-move',
  'compact.after-day-index',
];

async function objectSizes(storage: ArchiveStorage): Promise<string[]> {
  const out: string[] = [];
  for await (const p of storage.list('')) out.push(`${p} ${(await storage.get(p))?.length ?? -1}`);
  return out;
}

/** Every reader sees each record once; an engine reading the folders never twice; verify finds nothing. */
async function expectWhole(storage: ArchiveStorage, ids: string[], step: string): Promise<void> {
  const report = await verifyArchive(storage);
  expect({ step, findings: report.findings }).toEqual({ step, findings: [] });
  expect({ step, catalog: notOnce(ids, await catalogCounts(storage)) }).toEqual({ step, catalog: [] });
  const folders = await folderCounts(storage);
  expect({ step, twice: ids.filter((id) => (folders.get(id) ?? 0) > 1) }).toEqual({ step, twice: [] });
}

/** `archive query` counts every record once (reading the staged file of an hour switched but not yet moved). */
async function expectQueryOnce(storage: ArchiveStorage, url: string, ids: string[]): Promise<void> {
  const source = url.startsWith('file://')
    ? { kind: 'fs' as const, dir: fileURLToPath(url) }
    : { kind: 's3' as const };
  const r = await queryArchive(storage, source, {
    sql: 'select count(*) n, count(distinct event_id) d from deletions',
    table: 'orders',
    maxStageBytes: 1024 ** 3,
  });
  expect(r.rows).toEqual([[String(ids.length), String(ids.length)]]);
}

/**
 * Verify catches a flipped byte (through the CLI: it fails), a missing file and an extra file among the compacted
 * files of this backend; put back, the archive verifies again.
 */
async function expectTamperCaught(storage: ArchiveStorage, url: string, file: string): Promise<void> {
  const kinds = async (): Promise<string[]> => (await verifyArchive(storage)).findings.map((f) => f.kind);
  const body = (await storage.get(file)) as Buffer;
  const flipped = Buffer.from(body);
  flipped[40] = (flipped[40] as number) ^ 1;
  await storage.put(file, flipped);
  const cli = await runCli(['archive', 'verify', '--archive', url, '--json'], {});
  expect({
    code: cli.code,
    kinds: JSON.parse(cli.stdout).findings.map((f: { kind: string }) => f.kind),
  }).toEqual({
    code: 1,
    kinds: ['altered-file'],
  });
  await storage.delete(file);
  expect(await kinds()).toEqual(['missing-file']);
  await storage.put(file, body);
  const extra = file.replace(/compacted~\d{6}/, 'compacted~999999');
  await storage.put(extra, body);
  expect(await kinds()).toEqual(['extra-file']);
  await storage.delete(extra);
  expect(await kinds()).toEqual([]);
}

export function compactSuites(backend: 'fs' | 's3'): void {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  describe(`archive compact (${backend})`, () => {
    it('dry run, then a SIGKILL at each step (recovery too) with the archive whole after each; a rerun finishes', async () => {
      const url = await createTestArchive(backend, uniqueName(`compact-${backend}`), dirs);
      const storage = openArchiveStorage(testConfig({ archive: { url } }));
      const ids = await seedHours(storage, { hours: 2, perHour: 8, perRoll: 4, format: 'avro' });
      const env = { TTLSTREAM_ARCHIVE_FORMAT: 'parquet' };
      const cmd = ['archive', 'compact', '--archive', url, '--table', 'orders'];

      const before = await objectSizes(storage);
      const dry = await runCli([...cmd, '--dry-run', '--json'], env);
      expect(dry.code).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, planned: [{}, {}] });
      expect(await objectSizes(storage)).toEqual(before);

      for (const step of STEPS) {
        const crashed = await runCli(cmd, { ...env, TTLSTREAM_CRASH_AT: step });
        expect({
          step,
          signal: crashed.signal,
          said: crashed.stderr.includes(`crash point ${step}`),
        }).toEqual({
          step,
          signal: 'SIGKILL',
          said: true,
        });
        await expectWhole(storage, ids, step);
        // Killed between moving a file's index and the file: `archive query` reads it where it was staged.
        if (step === 'compact.after-old-data') await expectQueryOnce(storage, url, ids);
      }
      const done = await runCli([...cmd, '--json'], env);
      expect(done.code).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ ok: true, failed: [], busy: [] });
      await expectWhole(storage, ids, 'done');
      const report = await verifyArchive(storage);
      expect(report).toMatchObject({ compactInProgress: [], dayIndexes: 1, rows: ids.length });
      const files: string[] = [];
      for await (const p of storage.list('table=orders/')) files.push(p);
      expect(files.map((f) => parseDataFilePath(f)?.compaction?.files)).toEqual([1, 1]);
      expect(files.every((f) => f.endsWith('.parquet'))).toBe(true);
      await expectQueryOnce(storage, url, ids);
      await expectTamperCaught(storage, url, files[0] as string);
      // Nine CLI processes: 20-40 s on S3, 230 s measured at load average 22 on the shared machine.
    }, 300_000);

    it('a key look-up and an erasure read the day key index and the files that hold the key', async () => {
      const url = await createTestArchive(backend, uniqueName(`compactk-${backend}`), dirs);
      const storage = openArchiveStorage(testConfig({ archive: { url } }));
      await seedHours(storage, { hours: 2, perHour: 8, perRoll: 4 });
      expect((await runCli(['archive', 'compact', '--archive', url], {})).code).toBe(0);
      let day = 0;
      for await (const p of storage.list('_index/table=orders/')) if (parseDayIndexPath(p)) day += 1;
      expect(day).toBe(1);
      const key = '{"pk":{"S":"item-9"},"sk":{"N":"2"}}';
      const shown = await runCli(
        ['archive', 'show', '--archive', url, '--table', 'orders', '--key', key, '--json'],
        {},
      );
      expect(shown.code).toBe(0);
      expect(shown.stdout.trim().split('\n')).toHaveLength(1);
      const erased = await runCli(
        ['archive', 'erase', '--archive', url, '--table', 'orders', '--key', key, '--json'],
        {},
      );
      expect(erased.code).toBe(0);
      expect(JSON.parse(erased.stdout)).toMatchObject({ rowsRemoved: 1, files: [{ generation: 1 }] });
      expect(await openCatalog(storage).findVersions('orders', key)).toEqual([]);
      const report = await verifyArchive(storage);
      expect(report.findings).toEqual([]);
      expect(report.erased).toBe(1);
    });
  });
}
