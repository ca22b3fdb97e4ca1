import { ValidationError } from '../core/errors';
import type { ArchivedRecord } from '../schemas';
import { openCatalog } from './catalog';
import { HOUR_MS, hourStartMs } from './catalog/range';
import { filesReplacing } from './ledgers/compaction-moves';
import { decodeDataFile } from './format';
import { decodeSegment, parseCompactPath, parseDataFilePath, type ArchiveStorage } from './storage';

/**
 * Reading archive data files of either format (archive/format/): the format goes by the file's
 * extension. A damaged file is an error naming it, never a silently shorter list of records.
 */

/** Every row of one data file, validated against the contract. */
export function decodeArchiveFile(file: Buffer, path: string): Promise<ArchivedRecord[]> {
  return decodeDataFile(file, path);
}

/**
 * The rows of one data file of the archive. A file the catalog listed that a compaction replaced (or moved into
 * place), or an erasure rewrote, before this read gives the rows of what took its place (docs/decisions/0037):
 * readers pick rows by eventID, so they still find each of its rows, once (an erased row is gone).
 */
export async function readArchiveFile(storage: ArchiveStorage, path: string): Promise<ArchivedRecord[]> {
  const body = await storage.get(path);
  if (body !== null) return decodeArchiveFile(body, path);
  const moved = await rowsOfReplacement(storage, path);
  if (moved) return moved;
  throw new ValidationError(`${path}: data file is missing from the archive at ${storage.root}`);
}

async function rowsOfReplacement(storage: ArchiveStorage, path: string): Promise<ArchivedRecord[] | null> {
  const staged = parseCompactPath(path)?.staged;
  if (staged) {
    const body = await storage.get(staged);
    return body ? decodeArchiveFile(body, staged) : null;
  }
  const parsed = parseDataFilePath(path);
  const table = parsed ? decodeSegment(parsed.tableSegment) : null;
  if (!parsed || table === null) return null;
  // Replaced by a compaction: its files; else rewritten by an erasure: its newer generation.
  const wanted = new Set((await filesReplacing(storage, parsed.base)) ?? [parsed.base]);
  const fromMs = hourStartMs(parsed.date, parsed.hour);
  const out: ArchivedRecord[] = [];
  for await (const f of openCatalog(storage).listFiles(table, { fromMs, toMs: fromMs + HOUR_MS })) {
    if (!wanted.has(f.base) || f.path === path) continue;
    const body = await storage.get(f.path);
    if (body === null) return null;
    out.push(...(await decodeArchiveFile(body, f.path)));
  }
  return out;
}

/**
 * The REMOVE rows of one file with the given eventIDs (the catalog's row numbers are a hint; the
 * eventID is what is checked, so a stale index can never hand back another item's record).
 */
export async function readRemoves(
  storage: ArchiveStorage,
  path: string,
  eventIDs: Iterable<string>,
): Promise<Map<string, ArchivedRecord>> {
  const wanted = new Set(eventIDs);
  const out = new Map<string, ArchivedRecord>();
  for (const row of await readArchiveFile(storage, path)) {
    if (row.kind === 'remove' && wanted.has(row.eventID)) out.set(row.eventID, row);
  }
  return out;
}
