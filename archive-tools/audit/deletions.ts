import { ValidationError } from '../../core/errors';
import type { TableTtlSettings } from '../../policy/settings';
import { ttlInstantOf, type TtlWindow } from '../../policy/window';
import { deletedBy, type ArchivedRecord, type AttributeMap } from '../../schemas';
import { openCatalog, type CatalogRow } from '../../archive/catalog';
import { readArchiveFile } from '../../archive/reader';
import type { ArchiveStorage } from '../../archive/storage';
import type { ArchivedDeletion } from './report';

export interface DeletionReadOptions {
  table: string;
  /** The table's TTL settings: the policy that turns an image into its TTL instant. */
  settings: TableTtlSettings;
  window: TtlWindow;
  /** Deletions are looked for up to now (plus an hour of clock slack). */
  nowMs: number;
  /** How the key is printed (canonical JSON, or a digest with --hash-keys); `canonical` is the key index's form. */
  keyOf(keys: AttributeMap, canonical: string): string;
  /** Data files read at once (default 4 on S3, 1 on a file system). */
  readAhead?: number;
  /** After the catalog pass (total known) and after each data file. */
  onProgress?(filesDone: number, filesTotal: number): void;
}

const HOUR_MS = 3_600_000;
const SECOND_MS = 1000;

/**
 * Every archived REMOVE that can belong to the window, read through the catalog (the path restore, replay and
 * `archive show` take, so whatever the catalog leaves out is left out here too) and then the data files holding
 * them, each file once, in catalog order. A deletion is never before its TTL instant, but its deletion time is in
 * whole seconds, so deletions are read from a second before the window's start up to now: a deletion of the
 * window may come arbitrarily late. Retractions are read over the same span (a RETRACT follows its REMOVE).
 * Each eventID counts once (a re-publish outside the archiver's de-duplication window is archived twice).
 *
 * Two passes over the key indexes (they read ~35× faster than the records they index): the first collects the
 * retracted eventIDs and counts the data files, the second reads the files as their index rows come. So memory
 * holds the eventIDs (retracted, and seen for de-duplication) and a few files, never the window's index rows.
 */
export async function* readDeletions(
  storage: ArchiveStorage,
  options: DeletionReadOptions,
): AsyncIterable<ArchivedDeletion> {
  const range = { fromMs: Math.max(0, options.window.fromMs - SECOND_MS), toMs: options.nowMs + HOUR_MS };
  const retracted = new Set<string>();
  const files = new Set<string>();
  for await (const row of openCatalog(storage).scan(options.table, range)) {
    if (row.kind === 'retract') retracted.add(row.retractsEventID ?? row.eventID);
    else files.add(row.file);
  }
  const total = files.size;
  files.clear();
  options.onProgress?.(0, total);

  // On S3 a few files in flight hide the request latency; on a file system the read is CPU-bound (decoding), and
  // files decoded ahead only hold their rows on the heap longer (measured slower, bench/audit.ts).
  const readAhead = Math.max(1, options.readAhead ?? (storage.kind === 's3' ? 4 : 1));
  const groups = removesByFile(openCatalog(storage).scan(options.table, range))[Symbol.asyncIterator]();
  const pending: Array<{ group: FileGroup; read: Promise<ArchivedRecord[]> }> = [];
  let exhausted = false;
  // Keeps `readAhead` files in flight; called before a file's rows are handed out, so the next reads overlap them.
  const fill = async (): Promise<void> => {
    while (!exhausted && pending.length < readAhead) {
      const next = await groups.next();
      if (next.done) {
        exhausted = true;
        return;
      }
      const read = readArchiveFile(storage, next.value.file);
      // Awaited in order below; this only keeps a failure from being reported as unhandled meanwhile.
      read.catch(() => undefined);
      pending.push({ group: next.value, read });
    }
  };
  const seen = new Set<string>();
  let done = 0;
  await fill();
  while (pending.length > 0) {
    const { group, read } = pending.shift() as (typeof pending)[number];
    const records = await read;
    await fill();
    for (const index of group.rows) {
      if (seen.has(index.eventID)) continue;
      seen.add(index.eventID);
      const record = recordNamedBy(index, records, group.file);
      const r = record.record;
      if (!r) throw new ValidationError(`${group.file} row ${index.row}: not a REMOVE`);
      const deletedAtMs = r.dynamodb.ApproximateCreationDateTime * SECOND_MS;
      yield {
        key: options.keyOf(r.dynamodb.Keys, index.key),
        ttlAtMs: ttlInstantOf(options.settings, r.dynamodb.OldImage, deletedAtMs),
        deletedAtMs,
        publishedAtMs: record.kafkaTimestamp,
        eventID: r.eventID,
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        file: group.file,
        row: index.row,
        retracted: retracted.has(r.eventID),
        deletedBy: deletedBy(r),
      };
    }
    options.onProgress?.(++done, Math.max(total, done));
  }
}

interface FileGroup {
  file: string;
  rows: CatalogRow[];
}

/** The REMOVE index rows of each data file together: the catalog yields one key index's rows after another. */
async function* removesByFile(rows: AsyncIterable<CatalogRow>): AsyncIterable<FileGroup> {
  let current: FileGroup | undefined;
  for await (const row of rows) {
    if (row.kind !== 'remove') continue;
    if (current?.file === row.file) {
      current.rows.push(row);
      continue;
    }
    if (current) yield current;
    current = { file: row.file, rows: [row] };
  }
  if (current) yield current;
}

/**
 * The row the index names; its row number is a hint and the eventID is what is checked, so a stale index can
 * never hand back another item's record (as `readRemoves` does).
 */
function recordNamedBy(index: CatalogRow, records: ArchivedRecord[], file: string): ArchivedRecord {
  const at = records[index.row];
  if (at && at.kind === 'remove' && at.eventID === index.eventID) return at;
  const found = records.find((r) => r.kind === 'remove' && r.eventID === index.eventID);
  if (!found)
    throw new ValidationError(`${file}: REMOVE ${index.eventID} named by its key index is not in the file`);
  return found;
}
