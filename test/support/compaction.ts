import { openCatalog } from '../../archive/catalog';
import { compactArchive, type CompactOptions, type CompactResult } from '../../archive-tools/compact';
import { decodeArchiveFile, readArchiveFile } from '../../archive/reader';
import { parseDataFilePath, type ArchiveStorage, type DataFormat } from '../../archive/storage';
import { archiveRows, tableRows } from './archive-fixture';

/**
 * The compaction tests' archives (unit and integration suites, and bench/archive-scale.ts): closed hours of
 * `orders` rolled by real partition workers on two topics, and how often each record comes back to each reader.
 */

export const HOUR = 3_600_000;
/** 2025-01-01T00:00Z: every hour of the fixture is long closed. */
export const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);

/**
 * `hours` hours of `orders`, each with `perHour` rows from each of topics `t0` and `t1`, rolled every `perRoll`
 * rows (so each hour holds several roll files of each topic); the rows' eventIDs.
 */
export async function seedHours(
  storage: ArchiveStorage,
  options: { hours: number; perHour: number; perRoll: number; format?: DataFormat; firstItem?: number },
): Promise<string[]> {
  const ids: string[] = [];
  const step = Math.floor(3600 / options.perHour);
  for (const [t, topic] of ['t0', 't1'].entries()) {
    const first = (options.firstItem ?? 0) + t * 100_000;
    const rows = tableRows('orders', options.hours * options.perHour, T0 / 1000 + t, step, 60, first);
    ids.push(...rows.map((r) => r.index.eventID));
    await archiveRows(storage, topic, rows, {
      perRoll: options.perRoll,
      first: BigInt(first),
      ...(options.format ? { format: options.format } : {}),
    });
  }
  return ids;
}

export function compactOptions(over: Partial<CompactOptions> = {}): CompactOptions {
  return {
    afterMs: 2 * HOUR,
    targetBytes: 128 * 1024 * 1024,
    maxRows: 100_000,
    format: 'parquet',
    levels: {},
    retentionDays: async () => null,
    actor: 'test',
    ...over,
  };
}

export function compact(storage: ArchiveStorage, over: Partial<CompactOptions> = {}): Promise<CompactResult> {
  return compactArchive(storage, compactOptions(over));
}

/** How often each eventID comes back through the catalog (restore, replay, show, audit read there). */
export async function catalogCounts(storage: ArchiveStorage): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const catalog = openCatalog(storage);
  for await (const row of catalog.scan('orders')) out.set(row.eventID, (out.get(row.eventID) ?? 0) + 1);
  // And reading each current file, as `archive query` and restore read them.
  const read = new Map<string, number>();
  for await (const f of catalog.listFiles('orders')) {
    if (f.indexPath === null) continue;
    for (const r of await readArchiveFile(storage, f.path))
      read.set(r.eventID, (read.get(r.eventID) ?? 0) + 1);
  }
  if (JSON.stringify([...read].sort()) !== JSON.stringify([...out].sort()))
    throw new Error('the catalog and the files it lists disagree');
  return out;
}

/** How often each eventID is in the data files an engine reading the folders sees (every file under table=). */
export async function folderCounts(storage: ArchiveStorage): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const p of storage.list('table=')) {
    if (!parseDataFilePath(p)) continue;
    const body = (await storage.get(p)) as Buffer;
    for (const r of await decodeArchiveFile(body, p)) out.set(r.eventID, (out.get(r.eventID) ?? 0) + 1);
  }
  return out;
}

/** The eventIDs not seen exactly once. */
export function notOnce(ids: readonly string[], counts: Map<string, number>): string[] {
  return ids.filter((id) => counts.get(id) !== 1);
}
