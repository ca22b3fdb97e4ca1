import { openCatalog } from '../../../../archive/catalog';
import { CompactionRecordSchema } from '../../../../archive/ledgers/compaction-records';
import { eraseArchive } from '../../../../archive-tools/erase';
import { writeErasureEntry } from '../../../../archive/ledgers/erasure';
import { readPartitionHistory, recentDedupKeys } from '../../../../archive/history';
import { decodeArchiveFile } from '../../../../archive/reader';
import { purgeArchive } from '../../../../archive-tools/purge';
import {
  COMPACT_DIR,
  KeyIndexSchema,
  parseArchiveJson,
  parseDataFilePath,
  parseDayIndexPath,
} from '../../../../archive/storage';
import { verifyArchive } from '../../../../archive-tools/verify';
import { silentLogger } from '../../../../core/logger';
import { keyDigest } from '../../../../schemas';
import { MemoryStorage, archiveRows, tableRows } from '../../../support/archive-fixture';
import { T0, catalogCounts, compact, folderCounts, notOnce, seedHours } from '../../../support/compaction';
import { CrashingStorage, copyOf, dropLocks } from './compact.support';

const dataPathsOf = (s: MemoryStorage): string[] =>
  [...s.objects.keys()].filter((k) => parseDataFilePath(k) !== null);

describe('archive compaction (docs/decisions/0037)', () => {
  it.each([
    ['avro', 'parquet'],
    ['parquet', 'parquet'],
    ['avro', 'avro'],
    ['parquet', 'avro'],
  ] as const)(
    'merges %s rolls into %s files, one per hour, in key order; each record once; verify follows it',
    async (from, to) => {
      const storage = new MemoryStorage();
      const ids = await seedHours(storage, { hours: 2, perHour: 30, perRoll: 10, format: from });
      const rolls = dataPathsOf(storage).length;
      const dry = await compact(storage, { format: to, dryRun: true });
      expect(dry.planned.map((u) => u.hour)).toEqual([
        'table=orders/date=2025-01-01/hour=00/',
        'table=orders/date=2025-01-01/hour=01/',
      ]);
      expect(dataPathsOf(storage)).toHaveLength(rolls);

      const r = await compact(storage, { format: to });
      expect(r.failed).toEqual([]);
      expect(r.totals).toMatchObject({ inputs: rolls, outputs: 2, rowsIn: ids.length, rowsOut: ids.length });
      expect(r.days).toEqual([{ table: 'orders', date: '2025-01-01' }]);
      const files = dataPathsOf(storage);
      expect(files.map((f) => parseDataFilePath(f)?.compaction)).toEqual([
        { number: 1, file: 1, files: 1 },
        { number: 1, file: 1, files: 1 },
      ]);
      expect(files.every((f) => f.endsWith(`.${to}`))).toBe(true);
      // Rows in key order (min/max statistics then prune a key), every record once wherever it is read.
      const rows = await decodeArchiveFile(
        storage.objects.get(files[0] as string) as Buffer,
        files[0] as string,
      );
      const keys = rows.map((x) => JSON.stringify(x.record?.dynamodb.Keys));
      expect(rows.length).toBe(ids.length / 2);
      expect(notOnce(ids, await catalogCounts(storage))).toEqual([]);
      expect(notOnce(ids, await folderCounts(storage))).toEqual([]);
      expect(new Set(keys).size).toBe(keys.length);
      const report = await verifyArchive(storage);
      expect(report.findings).toEqual([]);
      expect(report).toMatchObject({
        compacted: rolls,
        compactInProgress: [],
        rows: ids.length,
        dayIndexes: 1,
      });
      // Nothing left to do: a second run changes nothing.
      const before = [...storage.objects.keys()].filter((k) => !k.startsWith('_lock/')).sort();
      const again = await compact(storage, { format: to });
      expect(again.planned).toEqual([]);
      expect([...storage.objects.keys()].filter((k) => !k.startsWith('_lock/')).sort()).toEqual(before);
    },
  );

  it('a crash after any step leaves each record readable once and the archive provable; a rerun finishes', async () => {
    const seed = new MemoryStorage();
    const ids = await seedHours(seed, { hours: 1, perHour: 12, perRoll: 4 });
    const full = new CrashingStorage(seed);
    await compact(full);
    const steps = full.writes;
    expect(steps).toBeGreaterThan(15);
    for (let after = 1; after < steps; after++) {
      const storage = new CrashingStorage(seed, after);
      await compact(storage).catch(() => undefined);
      const state = copyOf(storage);
      const mid = await verifyArchive(state);
      expect({ after, findings: mid.findings }).toEqual({ after, findings: [] });
      expect({ after, catalog: notOnce(ids, await catalogCounts(state)) }).toEqual({ after, catalog: [] });
      // An engine reading the folders never sees a record twice (it may miss the hour while it is switched).
      const folders = await folderCounts(state);
      expect({ after, twice: ids.filter((id) => (folders.get(id) ?? 0) > 1) }).toEqual({ after, twice: [] });
      dropLocks(state);
      const rerun = await compact(state);
      expect({ after, failed: rerun.failed }).toEqual({ after, failed: [] });
      const done = await verifyArchive(state);
      expect({ after, findings: done.findings, inProgress: done.compactInProgress }).toEqual({
        after,
        findings: [],
        inProgress: [],
      });
      expect({ after, once: notOnce(ids, await folderCounts(state)) }).toEqual({ after, once: [] });
      expect([...state.objects.keys()].filter((k) => k.includes('/000001/'))).toEqual([]);
    }
    // A compaction and its recovery for every crash point: 1.5 s alone, 5 to 30 s beside the other suites.
  }, 90_000);

  it('a late roll of a compacted hour is read once beside it, then merged by the next run (compaction 2)', async () => {
    const storage = new MemoryStorage();
    const ids = await seedHours(storage, { hours: 1, perHour: 10, perRoll: 5 });
    await compact(storage);
    const late = tableRows('orders', 3, T0 / 1000 + 100, 1, 60, 500_000);
    await archiveRows(storage, 't9', late, { perRoll: 3, first: 500_000n });
    const all = [...ids, ...late.map((r) => r.index.eventID)];
    expect(notOnce(all, await catalogCounts(storage))).toEqual([]);
    expect((await verifyArchive(storage)).findings).toEqual([]);
    const r = await compact(storage);
    expect(r.units.map((u) => [u.number, u.inputs])).toEqual([[2, 2]]);
    expect(dataPathsOf(storage)).toEqual([
      'table=orders/date=2025-01-01/hour=00/compacted~000002-0001-0001.parquet',
    ]);
    expect(notOnce(all, await catalogCounts(storage))).toEqual([]);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.compactInProgress).toEqual([]);
  });

  it('splits an hour larger than the target into several files, each bounded by it', async () => {
    const storage = new MemoryStorage();
    const ids = await seedHours(storage, { hours: 1, perHour: 40, perRoll: 5 });
    const r = await compact(storage, { targetBytes: 1 });
    // The target is below one roll: each file takes one input, and the record seals them all.
    expect(r.totals.outputs).toBe(r.totals.inputs);
    const record = CompactionRecordSchema.parse(
      JSON.parse(
        (
          storage.objects.get(`${COMPACT_DIR}/table=orders/date=2025-01-01/hour=00/000001.json`) as Buffer
        ).toString(),
      ),
    );
    expect(record.files).toHaveLength(record.outputs);
    expect(notOnce(ids, await catalogCounts(storage))).toEqual([]);
    expect((await verifyArchive(storage)).findings).toEqual([]);
  });

  it('bounds the rows of each file by maxRows too (its rows are in memory while it is built)', async () => {
    const storage = new MemoryStorage();
    const ids = await seedHours(storage, { hours: 1, perHour: 40, perRoll: 5 });
    const r = await compact(storage, { maxRows: 20 });
    // 80 rows in rolls of 5: four files of 20, far below the byte target.
    expect(r.totals).toMatchObject({ inputs: 16, outputs: 4, rowsOut: ids.length });
    const sizes = await Promise.all(
      dataPathsOf(storage).map(
        async (f) => (await decodeArchiveFile(storage.objects.get(f) as Buffer, f)).length,
      ),
    );
    expect(sizes).toEqual([20, 20, 20, 20]);
    expect(notOnce(ids, await catalogCounts(storage))).toEqual([]);
    expect((await verifyArchive(storage)).findings).toEqual([]);
  });

  it('leaves out the rows of a key erased before it (ledger first), and an erasure rewrites a compacted file', async () => {
    const storage = new MemoryStorage();
    const ids = await seedHours(storage, { hours: 1, perHour: 10, perRoll: 5 });
    const key = { pk: { S: 'item-3' }, sk: { N: '3' } };
    // An erasure that stopped after its ledger entry: the compaction must not carry the key forward.
    await writeErasureEntry(storage, {
      table: 'orders',
      digest: keyDigest('orders', key),
      erasedAtMs: T0,
      reason: null,
      actor: 'test',
      state: 'erasing',
      files: [],
      rowsRemoved: 0,
    });
    const r = await compact(storage);
    const record = CompactionRecordSchema.parse(
      JSON.parse(
        (
          storage.objects.get(`${COMPACT_DIR}/table=orders/date=2025-01-01/hour=00/000001.json`) as Buffer
        ).toString(),
      ),
    );
    expect(record.erased).toEqual({ [keyDigest('orders', key)]: 1 });
    expect(r.totals.rowsOut).toBe(ids.length - 1);
    for (const f of dataPathsOf(storage))
      expect(
        (await decodeArchiveFile(storage.objects.get(f) as Buffer, f)).map((x) => x.record?.dynamodb.Keys),
      ).not.toContainEqual(key);
    expect((await verifyArchive(storage)).findings).toEqual([]);

    const other = { pk: { S: 'item-100004' }, sk: { N: String(100_004 % 7) } };
    const erased = await eraseArchive(storage, { table: 'orders', keys: [other], reason: null, actor: 't' });
    expect(erased.files.map((f) => [f.file, f.generation])).toEqual([
      ['table=orders/date=2025-01-01/hour=00/compacted~000001-0001-0001.parquet', 1],
    ]);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report).toMatchObject({ erased: 1, rows: ids.length - 2 });
    expect(await openCatalog(storage).findVersions('orders', other)).toEqual([]);
    // A compaction run after it has nothing to do, and keeps the generation.
    expect((await compact(storage)).planned).toEqual([]);
  });

  it('looks a key up through the day key index: one bucket per day, then the files that hold it', async () => {
    const storage = new MemoryStorage();
    await seedHours(storage, { hours: 6, perHour: 10, perRoll: 5 });
    await compact(storage);
    expect([...storage.objects.keys()].filter((k) => parseDayIndexPath(k))).toHaveLength(1);
    const reads: string[] = [];
    const get = storage.get.bind(storage);
    storage.get = async (p: string) => {
      reads.push(p);
      return get(p);
    };
    const versions = await openCatalog(storage).findVersions('orders', {
      pk: { S: 'item-7' },
      sk: { N: '0' },
    });
    expect(versions).toHaveLength(1);
    // The day's bucket and the key index of the one file that holds the key (not the other five hours').
    expect(reads.filter((p) => !p.startsWith('_erasure/'))).toEqual([
      expect.stringMatching(/_keys\//),
      `_index/${versions[0]?.file}.idx.json`,
    ]);
  });

  it('verify catches a flipped byte, a missing or extra file, a day index missing a key and rows that do not add up', async () => {
    const storage = new MemoryStorage();
    await seedHours(storage, { hours: 1, perHour: 10, perRoll: 5 });
    await compact(storage);
    const [file] = dataPathsOf(storage) as [string];
    const kinds = async (): Promise<string[]> => (await verifyArchive(storage)).findings.map((f) => f.kind);
    const body = storage.objects.get(file) as Buffer;
    const flipped = Buffer.from(body);
    flipped[40] = (flipped[40] as number) ^ 1;
    storage.objects.set(file, flipped);
    expect(await kinds()).toEqual(['altered-file']);
    storage.objects.delete(file);
    expect(await kinds()).toEqual(['missing-file']);
    storage.objects.set(file, body);
    storage.objects.set(file.replace('compacted~000001', 'compacted~000009'), body);
    expect(await kinds()).toEqual(['extra-file']);
    storage.objects.delete(file.replace('compacted~000001', 'compacted~000009'));
    const bucket = [...storage.objects.keys()].find((k) => parseDayIndexPath(k)) as string;
    const original = storage.objects.get(bucket) as Buffer;
    const header = original.indexOf(0x0a, original.indexOf(0x0a) + 1) + 1;
    const fewer = Buffer.concat([original.subarray(0, header), original.subarray(header + 10)]);
    storage.objects.set(
      bucket,
      Buffer.from(
        fewer.toString('latin1').replace(/"entries":(\d+)/, (_, n) => `"entries":${Number(n) - 1}`),
        'latin1',
      ),
    );
    expect(await kinds()).toEqual(['bad-key-index']);
    storage.objects.set(bucket, original);
    const recordPath = `${COMPACT_DIR}/table=orders/date=2025-01-01/hour=00/000001.json`;
    const record = JSON.parse((storage.objects.get(recordPath) as Buffer).toString()) as {
      rows: { in: number };
    };
    record.rows.in += 1;
    storage.objects.set(recordPath, Buffer.from(JSON.stringify(record)));
    expect(await kinds()).toEqual(['bad-compaction']);
  });

  it('purges a compacted hour past its retention as it purged the rolls, and its day key index with it', async () => {
    const storage = new MemoryStorage();
    await seedHours(storage, { hours: 2, perHour: 10, perRoll: 5 });
    await compact(storage);
    const compacted = dataPathsOf(storage);
    const r = await purgeArchive(storage, { retentionDays: async () => 1, actor: 'test' });
    expect(r.files.map((f) => f.file)).toEqual(compacted);
    expect(dataPathsOf(storage)).toEqual([]);
    expect([...storage.objects.keys()].filter((k) => k.startsWith('_index/'))).toEqual([]);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report).toMatchObject({ purged: 2, purgeInProgress: [] });
  });

  it("rebuilds the archiver's de-duplication window from a compacted hour, for the roll's own partition", async () => {
    const storage = new MemoryStorage();
    const ids = await seedHours(storage, { hours: 1, perHour: 10, perRoll: 5 });
    await compact(storage);
    const history = await readPartitionHistory(storage, 't0', 0, null, silentLogger);
    const keys = await recentDedupKeys(storage, history, 1000, 64, silentLogger);
    expect(keys.sort()).toEqual(
      ids
        .slice(0, 10)
        .map((id) => `r:${id}`)
        .sort(),
    );
  });

  it('reads a file the catalog listed before a compaction replaced it as the file that took its place', async () => {
    const storage = new MemoryStorage();
    await seedHours(storage, { hours: 1, perHour: 10, perRoll: 5 });
    const listed = [];
    for await (const f of openCatalog(storage).listFiles('orders')) listed.push(f);
    const index = parseArchiveJson(
      KeyIndexSchema,
      storage.objects.get(listed[0]?.indexPath as string) as Buffer,
      'i',
    );
    await compact(storage);
    const { readRemoves } = await import('../../../../archive/reader');
    const found = await readRemoves(
      storage,
      listed[0]?.path as string,
      index.rows.map((r) => r.eventID),
    );
    expect(found.size).toBe(index.rows.length);
  });
});
