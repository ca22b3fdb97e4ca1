import { crashPoint } from '../../core/crash-points';
import { sha256Hex } from '../../archive/chain/seal';
import { listWithIndexes, type AreaPath } from '../../archive/storage/key-index';
import { decodeSegment } from '../../archive/storage/safe-segment';
import {
  encodeArchiveJson,
  parseDataFilePath,
  parseDayIndexPath,
  purgePath,
  tablePrefix,
  type FileDigest,
  type PurgeRecord,
} from '../../archive/storage/layout';
import { listManifests } from '../../archive/storage/manifests';
import type { ArchiveStorage } from '../../archive/storage/types';
import { sealOf } from '../../archive/chain/seal-of';
import { DAY_MS, fileDueForPurge, retentionCutoffMs } from '../../archive/retention/policy';

/**
 * `archive purge`: removes the data files (and key indexes) whose records are all older than
 * their table's archive retention. Per file, in this order, so a crash at any step leaves either
 * the file or its record of removal, and a rerun finishes the job:
 *   1. `_purge/<file>.json`: the file's seal and the manifest that sealed it (verify accepts the
 *      sealed file's absence only with it);
 *   2. the key index, at either of its places (readers find rows only through it: the rows are gone for them now);
 *   3. the data file.
 * Manifests are kept: they hold offsets and digests, no personal data, and the chain needs them. A compacted file
 * (docs/decisions/0037) is purged the same way, its record naming the compaction's record as its seal; a day's key
 * index (decision 0038) goes once the whole day is due.
 */

export interface PurgeOptions {
  /** Days a table's archive is kept, or null to keep it (TTL settings override, else archive.retentionDays). */
  retentionDays: (table: string) => Promise<number | null>;
  /** Who purges, for the record (e.g. `cli:<user>` or `archiver:<host>`). */
  actor: string;
  table?: string;
  dryRun?: boolean;
  nowMs?: number;
  onProgress?: (done: number, total: number) => void;
  /** Aborting stops between two files (each file is purged whole). */
  signal?: AbortSignal;
}

export interface PurgeCandidate {
  file: string;
  table: string;
  rows: number | null;
  bytes: number | null;
}

export interface PurgeResult {
  /** Files due (all of them with dryRun, else the ones purged by this run). */
  files: PurgeCandidate[];
  rows: number;
  bytes: number;
  /** Due files already gone with their purge record (an earlier run). */
  alreadyPurged: number;
  dryRun: boolean;
  /** True when the signal stopped the run before every due file was purged. */
  stopped: boolean;
}

interface Due extends PurgeCandidate {
  manifest: { path: string; sha256: string };
  sealed: FileDigest | null;
  days: number;
  cutoffMs: number;
  /** The file's data files and indexes present, of every generation. */
  paths: AreaPath[];
}

export async function purgeArchive(storage: ArchiveStorage, options: PurgeOptions): Promise<PurgeResult> {
  const now = options.nowMs ?? Date.now();
  const { due, alreadyPurged, dayIndexes } = await findDue(storage, options, now);
  const result: PurgeResult = {
    files: [],
    rows: 0,
    bytes: 0,
    alreadyPurged,
    dryRun: options.dryRun ?? false,
    stopped: false,
  };
  if (options.dryRun) {
    for (const d of due) countPurged(result, d);
    return result;
  }
  for (const [n, d] of due.entries()) {
    if (options.signal?.aborted) {
      result.stopped = true;
      break;
    }
    await purgeFile(storage, d, options.actor, now);
    countPurged(result, d);
    options.onProgress?.(n + 1, due.length);
  }
  // A day's key index names files only: it goes once the whole day is past the retention.
  if (!result.stopped) for (const p of dayIndexes) await storage.delete(p);
  return result;
}

function countPurged(result: PurgeResult, c: PurgeCandidate): void {
  result.files.push({ file: c.file, table: c.table, rows: c.rows, bytes: c.bytes });
  result.rows += c.rows ?? 0;
  result.bytes += c.bytes ?? 0;
}

/**
 * Per sealed file (generation 0 name), what of it is present: its data files and indexes of every generation (an
 * erasure's rewrites go with the file they replaced); and the day key indexes' buckets, per table folder and day.
 */
async function presentFiles(
  storage: ArchiveStorage,
  table: string | undefined,
): Promise<{ files: Map<string, AreaPath[]>; days: Map<string, string[]> }> {
  const present = new Map<string, AreaPath[]>();
  const days = new Map<string, string[]>();
  for await (const p of listWithIndexes(storage, table !== undefined ? tablePrefix(table) : 'table=')) {
    const day = parseDayIndexPath(p.path);
    if (day) {
      const k = `${day.tableSegment}/${day.date}`;
      days.set(k, [...(days.get(k) ?? []), p.path]);
      continue;
    }
    const parsed = parseDataFilePath(p.dataPath);
    if (parsed) present.set(parsed.base, [...(present.get(parsed.base) ?? []), p]);
  }
  return { files: present, days };
}

/**
 * The compacted files past their table's retention (docs/decisions/0037): sealed by their compaction's record,
 * which a purge record names as it names a roll's manifest.
 */
async function dueCompacted(
  storage: ArchiveStorage,
  present: Map<string, AreaPath[]>,
  retention: (table: string) => Promise<number | null>,
  now: number,
): Promise<Due[]> {
  const due: Due[] = [];
  for (const [file, paths] of present) {
    const parsed = parseDataFilePath(file);
    if (!parsed?.compaction) continue;
    const table = decodeSegment(parsed.tableSegment) ?? parsed.tableSegment;
    const d = await retention(table);
    if (d === null) continue;
    const cutoffMs = retentionCutoffMs(now, d);
    if (!fileDueForPurge(file, cutoffMs)) continue;
    const seal = await sealOf(storage, file, 0);
    // A compaction not yet whole is its own to finish (or clear); its files are purged once it is.
    if (!seal) continue;
    const size = { rows: seal.sealed.rows, bytes: seal.sealed.bytes };
    due.push({
      file,
      table,
      ...size,
      manifest: seal.sealedBy,
      sealed: seal.sealed,
      days: d,
      cutoffMs,
      paths,
    });
  }
  return due;
}

/** The day key indexes of days wholly past their table's retention: removed after the day's files. */
async function dueDayIndexes(
  days: Map<string, string[]>,
  retention: (table: string) => Promise<number | null>,
  now: number,
): Promise<string[]> {
  const out: string[] = [];
  for (const [k, paths] of days) {
    const [segment, date] = k.split('/') as [string, string];
    const d = await retention(decodeSegment(segment) ?? segment);
    if (d !== null && Date.parse(`${date}T00:00:00Z`) + DAY_MS <= retentionCutoffMs(now, d))
      out.push(...paths);
  }
  return out;
}

/** The sealed files past their table's retention that are still present, and how many are gone already. */
async function findDue(
  storage: ArchiveStorage,
  options: PurgeOptions,
  now: number,
): Promise<{ due: Due[]; alreadyPurged: number; dayIndexes: string[] }> {
  const { files: present, days: dayIndexPaths } = await presentFiles(storage, options.table);
  const days = new Map<string, number | null>();
  const retention = async (table: string): Promise<number | null> => {
    if (!days.has(table)) days.set(table, await options.retentionDays(table));
    return days.get(table) ?? null;
  };
  const due: Due[] = [];
  let alreadyPurged = 0;
  for await (const listed of listManifests(storage)) {
    // verify reports an unreadable manifest; purge removes only what a readable seal names
    if (!('manifest' in listed)) continue;
    const { path, body, manifest } = listed;
    // A roll in progress is the archiver's (its redo rewrites exactly its files).
    if (manifest.state !== 'complete') continue;
    const sealedBy = { path, sha256: sha256Hex(body) };
    for (const [i, file] of manifest.files.entries()) {
      if (options.table !== undefined && !file.startsWith(tablePrefix(options.table))) continue;
      const parsed = parseDataFilePath(file);
      if (!parsed) continue;
      const table = decodeSegment(parsed.tableSegment) ?? parsed.tableSegment;
      const d = await retention(table);
      if (d === null) continue;
      const cutoffMs = retentionCutoffMs(now, d);
      if (!fileDueForPurge(file, cutoffMs)) continue;
      const paths = present.get(file) ?? [];
      if (paths.length === 0) {
        alreadyPurged += 1;
        continue;
      }
      const sealed = manifest.digests?.[i] ?? null;
      const size = { rows: sealed?.rows ?? null, bytes: sealed?.bytes ?? null };
      due.push({ file, table, ...size, manifest: sealedBy, sealed, days: d, cutoffMs, paths });
    }
  }
  due.push(...(await dueCompacted(storage, present, retention, now)));
  return { due, alreadyPurged, dayIndexes: await dueDayIndexes(dayIndexPaths, retention, now) };
}

/** The `_purge/` record first (a rerun after a crash keeps the first), then the indexes, then the data files. */
async function purgeFile(storage: ArchiveStorage, d: Due, actor: string, now: number): Promise<void> {
  const recordPath = purgePath(d.file);
  // A rerun after a crash keeps the first record (its time is when the removal began).
  if (!(await storage.get(recordPath))) {
    const record: PurgeRecord = {
      file: d.file,
      manifest: d.manifest,
      sealed: d.sealed,
      retentionDays: d.days,
      cutoffMs: d.cutoffMs,
      purgedAtMs: now,
      actor,
    };
    await storage.put(recordPath, encodeArchiveJson(record));
  }
  crashPoint('purge.after-record');
  for (const p of d.paths.filter((x) => x.isIndex)) await storage.delete(p.path);
  crashPoint('purge.after-index');
  for (const p of d.paths.filter((x) => !x.isIndex)) await storage.delete(p.path);
  crashPoint('purge.after-data');
}
