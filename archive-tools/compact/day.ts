import { crashPoint } from '../../core/crash-points';
import { ValidationError } from '../../core/errors';
import { openCatalog, type CatalogFile } from '../../archive/catalog';
import { buildDayIndex } from '../../archive/catalog/day-index';
import { HOUR_MS } from '../../archive/catalog/range';
import { digestOfIndexKey } from '../../archive/ledgers/erasure';
import { dayIndexPrefix } from '../../archive/storage/layout';
import type { ArchiveStorage } from '../../archive/storage/types';
import { parseKeyIndexRows } from '../../archive/storage/key-index-rows';

const DIGEST_BYTES = 32;

/** A file's key digests held as their bytes (a day's rows as 64-character strings took three times the memory). */
class Digests implements Iterable<string> {
  constructor(private readonly bytes: Buffer) {}

  *[Symbol.iterator](): Iterator<string> {
    for (let at = 0; at < this.bytes.length; at += DIGEST_BYTES)
      yield this.bytes.toString('hex', at, at + DIGEST_BYTES);
  }
}

/**
 * The day key index of one day of a table (docs/decisions/0038), built from its compacted files' key indexes once
 * every hour of the day is compacted: the new version's buckets are written, then every other version's removed
 * (a reader takes the newest whole version, so a crash in between leaves one that answers). Returns whether it was
 * built (not when the day changed since it was planned).
 */
export async function buildDay(
  storage: ArchiveStorage,
  day: { table: string; date: string; files: readonly string[] },
  nowMs: number,
  check: () => void,
): Promise<boolean> {
  const startMs = Date.parse(`${day.date}T00:00:00Z`);
  const current: CatalogFile[] = [];
  for await (const f of openCatalog(storage).listFiles(day.table, {
    fromMs: startMs,
    toMs: startMs + 24 * HOUR_MS,
  }))
    current.push(f);
  current.sort((a, b) => (a.base < b.base ? -1 : 1));
  const bases = current.map((f) => f.base);
  if (bases.join('\n') !== day.files.join('\n') || current.some((f) => !f.compaction || f.indexPath === null))
    return false;
  const digests: Digests[] = [];
  for (const f of current) {
    const body = await storage.get(f.indexPath as string);
    if (!body) throw new ValidationError(`${f.indexPath}: key index listed but gone`);
    const { rows } = parseKeyIndexRows(body, f.indexPath as string);
    const bytes = Buffer.alloc(rows.length * DIGEST_BYTES);
    rows.forEach((r, n) => bytes.write(digestOfIndexKey(day.table, r.key), n * DIGEST_BYTES, 'hex'));
    digests.push(new Digests(bytes));
  }
  const buckets = buildDayIndex(day.table, day.date, bases, digests, nowMs);
  check();
  for (const b of buckets) await storage.put(b.path, b.body);
  crashPoint('compact.after-day-index');
  const mine = new Set(buckets.map((b) => b.path));
  const older: string[] = [];
  for await (const p of storage.list(dayIndexPrefix(day.table, day.date))) if (!mine.has(p)) older.push(p);
  for (const p of older) await storage.delete(p);
  return true;
}
