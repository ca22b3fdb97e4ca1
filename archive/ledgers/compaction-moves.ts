import { readKeyIndex } from '../storage/key-index';
import {
  KeyIndexSchema,
  compactListingPrefix,
  hourFolderOf,
  parseArchiveJson,
  parseCompactPath,
  type KeyIndexRow,
} from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';
import { CompactionRecordSchema } from './compaction-records';

/** Per hour folder, its whole compactions: what each replaced and (once read) the rows of the files it wrote. */
export type MovedCache = Map<string, Array<{ replaced: Set<string>; files: string[]; rows?: KeyIndexRow[] }>>;

/**
 * Where the rows of a roll's file went when a compaction replaced it (docs/decisions/0037): the key index rows of
 * the files the compaction wrote, each naming its topic and partition. Null when no whole compaction record of its
 * hour replaced it. The archiver's recovery reads it to rebuild its de-duplication window over compacted hours;
 * `cache` keeps an hour's records and rows for the other files of the hour.
 */
export async function rowsMovedByCompaction(
  storage: ArchiveStorage,
  file: string,
  cache: MovedCache = new Map(),
): Promise<KeyIndexRow[] | null> {
  const record = await replacing(storage, file, cache);
  if (!record) return null;
  if (!record.rows) {
    const rows: KeyIndexRow[] = [];
    for (const f of record.files) {
      const found = await readKeyIndex(storage, f);
      if (found) rows.push(...parseArchiveJson(KeyIndexSchema, found.body, found.path).rows);
    }
    record.rows = rows;
  }
  return record.rows;
}

/** The files (generation 0 names) of the whole compaction that replaced `file`, or null. */
export async function filesReplacing(storage: ArchiveStorage, file: string): Promise<string[] | null> {
  return (await replacing(storage, file, new Map()))?.files ?? null;
}

async function replacing(
  storage: ArchiveStorage,
  file: string,
  cache: MovedCache,
): Promise<{ replaced: Set<string>; files: string[]; rows?: KeyIndexRow[] } | null> {
  const hour = hourFolderOf(file);
  let records = cache.get(hour);
  if (!records) {
    records = [];
    for await (const path of storage.list(compactListingPrefix(hour))) {
      const parsed = parseCompactPath(path);
      if (!parsed || parsed.staged) continue;
      const body = await storage.get(path);
      if (!body) continue;
      const record = parseArchiveJson(CompactionRecordSchema, body, path);
      if (record.files.length !== record.outputs) continue;
      records.push({
        replaced: new Set(record.replaced.map((r) => r.base)),
        files: record.files.map((f) => f.path),
      });
    }
    cache.set(hour, records);
  }
  return records.find((r) => r.replaced.has(file)) ?? null;
}
