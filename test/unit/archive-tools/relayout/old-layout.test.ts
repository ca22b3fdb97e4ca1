import { openCatalog } from '../../../../archive/catalog';
import { eraseArchive } from '../../../../archive-tools/erase';
import { moveIndexes } from '../../../../archive-tools/relayout';
import { purgeArchive } from '../../../../archive-tools/purge';
import { prepareRow } from '../../../../archive/rows';
import {
  besideIndexPathFor,
  indexPathFor,
  isBesideIndexPath,
  type Manifest,
} from '../../../../archive/storage';
import { verifyArchive } from '../../../../archive-tools/verify';
import { toArchived, type AttributeMap } from '../../../../schemas';
import { archiveRows, collect, makeRecord, MemoryStorage, withKeys } from '../../../support/archive-fixture';

/**
 * An archive whose older rolls were written before key indexes moved to `_index/` (docs/decisions/0033): their
 * indexes sit beside the data files. Verify, erase, purge and the catalog read it alongside newer rolls, and
 * `archive move-indexes` moves the older indexes, each checked against its seal.
 */

const T = 'topic';
const NOW = Date.UTC(2024, 6, 1, 12, 0);
const HOUR = 3_600_000;
const SUBJECT: AttributeMap = { pk: { S: 'subject' }, sk: { N: '1' } };
/** Offsets of the subject's records (all of orders): two in the older rolls, one in a newer. */
const SUBJECT_AT = [1, 5, 17];

/** 20 records twelve hours apart over two tables, rolls of 4; the first 3 rolls in the layout before `_index/`. */
async function mixedArchive(): Promise<{ storage: MemoryStorage; older: string[]; newer: string[] }> {
  const storage = new MemoryStorage();
  const rows = Array.from({ length: 20 }, (_, i) => {
    const table = i % 2 ? 'orders' : 'users';
    const r = makeRecord(table, i, Math.floor((NOW - (20 - i) * 12 * HOUR) / 1000), 100);
    return prepareRow(
      toArchived(
        { kind: 'remove', record: SUBJECT_AT.includes(i) ? withKeys(r, SUBJECT) : r },
        { topic: T, partition: 0, offset: String(i), timestamp: String(i) },
      ),
    );
  });
  await archiveRows(storage, T, rows, { perRoll: 4 });
  const manifests = [...storage.objects.keys()].filter((k) => k.startsWith('_manifest/')).sort();
  const filesOf = (paths: string[]): string[] => paths.flatMap((p) => (storage.json(p) as Manifest).files);
  const older = filesOf(manifests.slice(0, 3));
  // What a version before the layout change wrote: the same index bytes (the seal's), beside the data file.
  for (const f of older) {
    storage.objects.set(besideIndexPathFor(f), storage.objects.get(indexPathFor(f)) as Buffer);
    storage.objects.delete(indexPathFor(f));
  }
  return { storage, older, newer: filesOf(manifests.slice(3)) };
}

const beside = (s: MemoryStorage): string[] => [...s.objects.keys()].filter(isBesideIndexPath).sort();

describe('an archive with key indexes beside its older data files', () => {
  it('verifies, counting the indexes beside, and the catalog reads every row of both layouts', async () => {
    const { storage, older } = await mixedArchive();
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.indexesBeside).toBe(older.length);
    expect(report.rows).toBe(20);
    const catalog = openCatalog(storage);
    const rows = [...(await collect(catalog.scan('orders'))), ...(await collect(catalog.scan('users')))];
    expect(rows).toHaveLength(20);
    // Tampering with an index beside is caught where it is.
    const f = older[0] as string;
    storage.objects.set(besideIndexPathFor(f), Buffer.from('{}'));
    expect((await verifyArchive(storage)).findings.map((x) => [x.kind, x.path])).toEqual([
      ['altered-index', besideIndexPathFor(f)],
    ]);
    storage.objects.delete(besideIndexPathFor(f));
    expect((await verifyArchive(storage)).findings.map((x) => [x.kind, x.path])).toEqual([
      ['missing-index', indexPathFor(f)],
    ]);
  });

  it('erases from files of both layouts, leaving no index of a superseded generation at either place', async () => {
    const { storage, older } = await mixedArchive();
    const result = await eraseArchive(storage, {
      table: 'orders',
      keys: [SUBJECT],
      reason: null,
      actor: 't',
      nowMs: NOW,
    });
    expect(result.rowsRemoved).toBe(SUBJECT_AT.length);
    const rewritten = result.files.map((f) => f.file);
    expect(rewritten.filter((f) => older.includes(f))).toHaveLength(2);
    for (const f of rewritten) {
      expect([storage.objects.has(indexPathFor(f)), storage.objects.has(besideIndexPathFor(f))]).toEqual([
        false,
        false,
      ]);
      expect(storage.objects.has(indexPathFor(f.replace('.avro', '~1.avro')))).toBe(true);
    }
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.erased).toBe(rewritten.length);
    expect(report.eraseInProgress).toEqual([]);
    expect(await collect(openCatalog(storage).scan('orders', { key: SUBJECT }))).toEqual([]);
  });

  it('purges files of both layouts with their indexes, and verify accepts each removal', async () => {
    const { storage, older, newer } = await mixedArchive();
    const result = await purgeArchive(storage, { retentionDays: async () => 3, actor: 't', nowMs: NOW });
    const purged = result.files.map((f) => f.file);
    expect(purged.filter((f) => older.includes(f)).length).toBe(older.length);
    expect(purged.filter((f) => newer.includes(f)).length).toBeGreaterThan(0);
    for (const f of purged)
      for (const p of [f, indexPathFor(f), besideIndexPathFor(f)]) expect(storage.objects.has(p)).toBe(false);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.purged).toBe(purged.length);
    expect(report.indexesBeside).toBe(0);
  });

  it('archive move-indexes moves each index checked against its seal; a dry run and a rerun move nothing', async () => {
    const { storage, older } = await mixedArchive();
    const before = new Map(storage.objects);
    const dry = await moveIndexes(storage, { dryRun: true });
    expect(dry.moved).toEqual(older.map(besideIndexPathFor).sort());
    expect(storage.objects).toEqual(before);

    // One index altered (refused, left where it is); one already copied by a run interrupted before its removal.
    const [altered, copied] = older as [string, string];
    storage.objects.set(besideIndexPathFor(altered), Buffer.from('{}'));
    storage.objects.set(indexPathFor(copied), storage.objects.get(besideIndexPathFor(copied)) as Buffer);
    const progress: number[] = [];
    const run = await moveIndexes(storage, { onProgress: (done) => progress.push(done) });
    expect(run.refused).toEqual([
      { path: besideIndexPathFor(altered), reason: expect.stringContaining('does not match its seal') },
    ]);
    expect(run.moved).toHaveLength(older.length - 1);
    expect(progress).toEqual(older.map((_, i) => i + 1));
    expect(beside(storage)).toEqual([besideIndexPathFor(altered)]);
    expect((await verifyArchive(storage)).findings.map((f) => f.kind)).toEqual(['altered-index']);

    // Put back as sealed, the last one moves; a rerun finds nothing left.
    storage.objects.set(besideIndexPathFor(altered), before.get(besideIndexPathFor(altered)) as Buffer);
    expect((await moveIndexes(storage)).moved).toEqual([besideIndexPathFor(altered)]);
    expect(await moveIndexes(storage)).toEqual({ moved: [], refused: [], dryRun: false, stopped: false });
    const report = await verifyArchive(storage);
    expect([report.findings, report.indexesBeside, report.rows]).toEqual([[], 0, 20]);
  });
});
