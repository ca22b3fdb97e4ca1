import { ValidationError } from '../../core/errors';
import type { TableTtlSettings } from '../../policy/settings';
import { ttlInstantOf, type TtlWindow } from '../../policy/window';
import type { ArchivedRecord, AttributeMap } from '../../schemas';
import { openCatalog, type CatalogRow } from '../catalog';
import { readArchiveFile } from '../reader';
import type { ArchiveStorage } from '../storage';
import type { ArchivedDeletion } from './report';

export interface DeletionReadOptions {
  table: string;
  /** The table's TTL settings: the policy that turns an image into its TTL instant. */
  settings: TableTtlSettings;
  window: TtlWindow;
  /** Deletions are looked for up to now (plus an hour of clock slack). */
  nowMs: number;
  /** How the key is printed (canonical JSON, or a digest with --hash-keys). */
  keyOf(keys: AttributeMap): string;
  /** Data files read at once: hides S3 latency, bounds memory. */
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
 */
export async function* readDeletions(
  storage: ArchiveStorage,
  options: DeletionReadOptions,
): AsyncIterable<ArchivedDeletion> {
  const removes = new Map<string, CatalogRow>();
  const retracted = new Set<string>();
  const range = { fromMs: Math.max(0, options.window.fromMs - SECOND_MS), toMs: options.nowMs + HOUR_MS };
  for await (const row of openCatalog(storage).scan(options.table, range)) {
    if (row.kind === 'retract') retracted.add(row.retractsEventID ?? row.eventID);
    else if (!removes.has(row.eventID)) removes.set(row.eventID, row);
  }
  const byFile = new Map<string, CatalogRow[]>();
  for (const row of removes.values()) {
    const rows = byFile.get(row.file);
    if (rows) rows.push(row);
    else byFile.set(row.file, [row]);
  }
  const files = [...byFile.keys()];
  options.onProgress?.(0, files.length);
  const readAhead = Math.max(1, options.readAhead ?? 4);
  const inFlight: Array<Promise<ArchivedRecord[]>> = [];
  let next = 0;
  const fill = (): void => {
    while (inFlight.length < readAhead && next < files.length) {
      const read = readArchiveFile(storage, files[next++] as string);
      // Awaited in order below; this only keeps a failure from being reported as unhandled meanwhile.
      read.catch(() => undefined);
      inFlight.push(read);
    }
  };
  fill();
  for (let done = 0; done < files.length; done++) {
    const file = files[done] as string;
    const records = await (inFlight.shift() as Promise<ArchivedRecord[]>);
    fill();
    for (const index of byFile.get(file) as CatalogRow[]) {
      const record = pick(records, index, file);
      const r = record.record;
      if (!r) throw new ValidationError(`${file} row ${index.row}: not a REMOVE`);
      const deletedAtMs = r.dynamodb.ApproximateCreationDateTime * SECOND_MS;
      yield {
        key: options.keyOf(r.dynamodb.Keys),
        ttlAtMs: ttlInstantOf(options.settings, r.dynamodb.OldImage, deletedAtMs),
        deletedAtMs,
        publishedAtMs: record.kafkaTimestamp,
        eventID: r.eventID,
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        file,
        row: index.row,
        retracted: retracted.has(r.eventID),
      };
    }
    options.onProgress?.(done + 1, files.length);
  }
}

/**
 * The row the index names; its row number is a hint and the eventID is what is checked, so a stale index can
 * never hand back another item's record (as `readRemoves` does).
 */
function pick(records: ArchivedRecord[], index: CatalogRow, file: string): ArchivedRecord {
  const at = records[index.row];
  if (at && at.kind === 'remove' && at.eventID === index.eventID) return at;
  const found = records.find((r) => r.kind === 'remove' && r.eventID === index.eventID);
  if (!found)
    throw new ValidationError(`${file}: REMOVE ${index.eventID} named by its key index is not in the file`);
  return found;
}
