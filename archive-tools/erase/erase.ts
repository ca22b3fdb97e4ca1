import { crashPoint } from '../../core/crash-points';
import { ValidationError } from '../../core/errors';
import { keyDigest, type AttributeMap } from '../../schemas';
import { openCatalog, type CatalogFile } from '../../archive/catalog';
import { sha256Hex } from '../../archive/chain/seal';
import { sealOf } from '../../archive/chain/seal-of';
import { waitForLock, type HeldLock, type LockRecord } from '../../archive/lock';
import {
  MANIFEST_DIR,
  ManifestSchema,
  encodeArchiveJson,
  generationPath,
  indexPathFor,
  isIndexPath,
  parseArchiveJson,
  tablePrefix,
  type ChainLink,
  type FileDigest,
} from '../../archive/storage/layout';
import { readKeyIndex } from '../../archive/storage/key-index';
import type { ArchiveStorage } from '../../archive/storage/types';
import { readErasureEntry, writeErasureEntry } from '../../archive/ledgers/erasure';
import {
  nextGeneration,
  planFileRewrite,
  supersededPaths,
  withGeneration,
  type FileRewritePlan,
} from './plan';
import { rewriteFileBytes } from './rewrite';
import {
  EraseRecordSchema,
  eraseRecordPath,
  type EraseRecord,
  type ErasureEntry,
} from '../../archive/ledgers/erasure-records';

/**
 * `archive erase` (docs/decisions/0013): removes every archived record of some keys of one table.
 *   1. a ledger entry per key (its digest, never the key): from here on the catalog hides the
 *      key's rows and the archiver drops new records of it;
 *   2. per file holding such rows, a new generation: `_erase/<file>.json` naming it with its seal,
 *      its data file, then its key index under `_index/` (the switch: readers take the highest
 *      generation with an index), then the superseded generations' indexes (at either place) and data files;
 *   3. the ledger entries marked done, with the files and rows, counted from the `_erase/` records.
 * A crash leaves the old generation readable (with debris `verify` calls an erasure in progress)
 * or the new one plus old files; a rerun finishes either. Steps 1 to 3 run under the table's archive lock
 * (compact/lock.ts), so no compaction replaces a file while it is rewritten (docs/decisions/0037); the files to
 * rewrite are found through the catalog's key look-up, one day key index per compacted day (decision 0038).
 */

export interface EraseOptions {
  table: string;
  /** DynamoDB JSON keys of the items whose records go. */
  keys: AttributeMap[];
  reason: string | null;
  /** Who erases, for the ledger (e.g. `cli:<user>`). */
  actor: string;
  dryRun?: boolean;
  nowMs?: number;
  onProgress?: (done: number, total: number) => void;
  /** Aborting stops between two files (each file is rewritten whole). */
  signal?: AbortSignal;
  /** Told who holds the table's lock while the erasure waits for it (a compaction between two hours). */
  onWait?: (holder: LockRecord | null) => void;
  /** The table lock's lease (tests shorten it). */
  leaseMs?: number;
}

export interface ErasedFile {
  /** The file as manifests name it (generation 0). */
  file: string;
  /** The generation written (or that would be, in a dry run). */
  generation: number;
  rowsRemoved: number;
}

export interface EraseResult {
  table: string;
  /** keyDigest of each key, in the order given (duplicates once). */
  digests: string[];
  files: ErasedFile[];
  rowsRemoved: number;
  /** Superseded generations an earlier, interrupted run left behind, removed by this one. */
  finished: number;
  /** Files with rows of the keys in a roll still being written (the archiver's): not rewritten now. */
  skippedInProgress: string[];
  /**
   * Manifests of rolls still `writing` files of the table. A roll that began before the ledger
   * entry may still write the key (the archiver checks the ledger when a roll starts): the erasure
   * is complete only once a rerun finds none.
   */
  rollsInProgress: string[];
  dryRun: boolean;
  stopped: boolean;
}

interface Affected {
  current: CatalogFile;
  plan: FileRewritePlan;
  generation: number;
  /** What seals generation 0 (its manifest or compaction record); null when an `_erase/` record names it already. */
  sealedBy: ChainLink | null;
}

/**
 * The rolls still `writing` files of the table. A roll being written is its partition's newest (recovery redoes or
 * removes any other), so the manifest names are listed and only the newest of each partition is read.
 */
async function rollsWriting(storage: ArchiveStorage, table: string): Promise<string[]> {
  const newest = new Map<string, string>();
  for await (const path of storage.list(`${MANIFEST_DIR}/`))
    newest.set(path.slice(0, path.lastIndexOf('/')), path);
  const prefix = tablePrefix(table);
  const writing: string[] = [];
  for (const path of newest.values()) {
    const body = await storage.get(path);
    if (!body) continue;
    try {
      const manifest = parseArchiveJson(ManifestSchema, body, path);
      if (manifest.state !== 'complete' && manifest.files.some((f) => f.startsWith(prefix)))
        writing.push(path);
    } catch {
      continue; // verify reports it
    }
  }
  return writing;
}

async function readRecord(storage: ArchiveStorage, base: string): Promise<EraseRecord | null> {
  const path = eraseRecordPath(base);
  const body = await storage.get(path);
  return body ? parseArchiveJson(EraseRecordSchema, body, path) : null;
}

export async function eraseArchive(storage: ArchiveStorage, options: EraseOptions): Promise<EraseResult> {
  const { table } = options;
  const now = options.nowMs ?? Date.now();
  if (options.keys.length === 0) throw new ValidationError('archive erase: no key given');
  const digests = [...new Set(options.keys.map((k) => keyDigest(table, k)))];
  const wanted = new Set(digests);
  const result: EraseResult = {
    table,
    digests,
    files: [],
    rowsRemoved: 0,
    finished: 0,
    skippedInProgress: [],
    rollsInProgress: [],
    dryRun: options.dryRun ?? false,
    stopped: false,
  };
  if (options.dryRun) {
    const plan = await planErase(storage, table, wanted);
    Object.assign(result, { skippedInProgress: plan.skippedInProgress, rollsInProgress: plan.writing });
    for (const a of plan.affected) countRewrite(result, a);
    return result;
  }
  const lock = await waitForLock(storage, {
    table,
    purpose: 'erase',
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onWait ? { onWait: options.onWait } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
  try {
    await eraseLocked(storage, options, { wanted, digests, now, lock, result });
  } finally {
    await lock.release().catch(() => undefined);
  }
  return result;
}

/** The steps of an erasure, the table's lock held. */
async function eraseLocked(
  storage: ArchiveStorage,
  options: EraseOptions,
  run: { wanted: Set<string>; digests: string[]; now: number; lock: HeldLock; result: EraseResult },
): Promise<void> {
  const { table } = options;
  const { wanted, digests, now, lock, result } = run;
  // 1. The ledger first: whatever happens next, readers and the archiver treat the keys as erased.
  lock.assertValid();
  const entries = await ledgerErasing(storage, table, digests, options, now);
  crashPoint('erase.after-ledger');
  const plan = await planErase(storage, table, wanted);
  Object.assign(result, { skippedInProgress: plan.skippedInProgress, rollsInProgress: plan.writing });
  lock.assertValid();
  result.finished += await removeLeftovers(storage, plan.leftovers);
  // 2. Each file rewritten without the keys' rows, a new generation sealed by an `_erase/` record.
  for (const [n, a] of plan.affected.entries()) {
    if (options.signal?.aborted) {
      result.stopped = true;
      break;
    }
    lock.assertValid();
    await rewriteFile(storage, a, options.actor, now);
    countRewrite(result, a);
    options.onProgress?.(n + 1, plan.affected.length);
  }
  // 3. The ledger's account, from the `_erase/` records of the files it concerns (a crashed run's too).
  if (!result.stopped) {
    lock.assertValid();
    await ledgerDone(storage, wanted, entries, plan);
  }
}

function countRewrite(result: EraseResult, a: Affected): void {
  result.files.push({ file: a.current.base, generation: a.generation, rowsRemoved: a.plan.removed });
  result.rowsRemoved += a.plan.removed;
}

/** What an erasure of `wanted` does to the table's archive: the files to rewrite and what is left as it is. */
interface ErasePlan {
  affected: Affected[];
  /** Files with rows of the keys whose roll is not sealed yet (the archiver is writing it): left for now. */
  skippedInProgress: string[];
  /** Rolls of the table still `writing`. */
  writing: string[];
  /** Superseded generations an interrupted run switched away from but did not remove, file by file. */
  leftovers: string[][];
  /** Files the key look-up found already rewritten by erasures (generation > 0): their records are counted. */
  rewritten: string[];
}

async function planErase(
  storage: ArchiveStorage,
  table: string,
  wanted: ReadonlySet<string>,
): Promise<ErasePlan> {
  const plan: ErasePlan = {
    affected: [],
    skippedInProgress: [],
    writing: await rollsWriting(storage, table),
    leftovers: [],
    rewritten: [],
  };
  // Only the files that may hold the keys: through the day key indexes, and every file of a day without one.
  for await (const { file, index } of openCatalog(storage).keyIndexes(table, wanted)) {
    // What an interrupted run switched already but did not clean up: superseded generations.
    if (file.superseded.length > 0) {
      const old = supersededPaths(file.base, file.generation);
      plan.leftovers.push([...old.index, ...old.data]);
    }
    if (file.generation > 0) plan.rewritten.push(file.base);
    const generation = nextGeneration(file.generation);
    const rewrite = planFileRewrite(index, wanted, generationPath(file.base, generation));
    if (!rewrite) continue;
    // Generation 0 is sealed by its roll's manifest or its compaction's record; a later one by its `_erase/` record.
    const seal = file.generation === 0 ? await sealOf(storage, file.base, 0) : null;
    if (file.generation === 0 && !seal) plan.skippedInProgress.push(file.base);
    else plan.affected.push({ current: file, plan: rewrite, generation, sealedBy: seal?.sealedBy ?? null });
  }
  return plan;
}

/** Each key's ledger entry `erasing` (kept as it is when an interrupted run wrote it already). */
async function ledgerErasing(
  storage: ArchiveStorage,
  table: string,
  digests: string[],
  options: EraseOptions,
  now: number,
): Promise<Map<string, ErasureEntry>> {
  const entries = new Map<string, ErasureEntry>();
  for (const digest of digests) {
    const before = await readErasureEntry(storage, table, digest);
    const entry: ErasureEntry = {
      table,
      digest,
      erasedAtMs: before?.erasedAtMs ?? now,
      reason: before?.reason ?? options.reason,
      actor: before?.actor ?? options.actor,
      state: 'erasing',
      files: before?.files ?? [],
      rowsRemoved: before?.rowsRemoved ?? 0,
    };
    entries.set(digest, entry);
    if (before?.state !== 'erasing') await writeErasureEntry(storage, entry);
  }
  return entries;
}

/** An interrupted run's switched generations: remove what they superseded (indexes first). Returns the files. */
async function removeLeftovers(storage: ArchiveStorage, leftovers: string[][]): Promise<number> {
  for (const debris of leftovers) {
    for (const p of debris.filter((d) => isIndexPath(d))) await storage.delete(p);
    for (const p of debris.filter((d) => !isIndexPath(d))) await storage.delete(p);
  }
  return leftovers.length;
}

/** Each key's ledger entry `done`, with the files and rows its `_erase/` records account for. */
async function ledgerDone(
  storage: ArchiveStorage,
  wanted: ReadonlySet<string>,
  entries: Map<string, ErasureEntry>,
  plan: ErasePlan,
): Promise<void> {
  // This run's rewrites count as planned; the files of earlier runs (in the entries, or found rewritten) from their
  // `_erase/` records.
  const now = new Set(plan.affected.map((a) => a.current.base));
  const earlier = new Set(
    [...plan.rewritten, ...[...entries.values()].flatMap((e) => e.files)].filter((f) => !now.has(f)),
  );
  const totals = await erasedTotals(storage, earlier, wanted);
  for (const a of plan.affected)
    for (const [digest, rows] of Object.entries(a.plan.erased)) {
      const t = totals.get(digest) ?? { files: new Set<string>(), rows: 0 };
      t.files.add(a.current.base);
      t.rows += rows;
      totals.set(digest, t);
    }
  for (const entry of entries.values()) {
    const t = totals.get(entry.digest);
    await writeErasureEntry(storage, {
      ...entry,
      state: 'done',
      files: t ? [...t.files].sort() : [],
      rowsRemoved: t?.rows ?? 0,
    });
  }
}

async function rewriteFile(storage: ArchiveStorage, a: Affected, actor: string, now: number): Promise<void> {
  const { current, plan, generation } = a;
  const body = await storage.get(current.path);
  if (!body) throw new ValidationError(`${current.path}: data file listed but gone`);
  const rewritten = await rewriteFileBytes(body, current.path, plan);
  const { data, index } = rewritten;
  const sealed: FileDigest = {
    path: plan.index.file,
    sha256: sha256Hex(data),
    bytes: data.length,
    rows: rewritten.rows,
    firstEventID: rewritten.firstEventID,
    lastEventID: rewritten.lastEventID,
    index: { sha256: sha256Hex(index), bytes: index.length },
  };
  const before = await readRecord(storage, current.base);
  const sealedBy = a.sealedBy ?? before?.manifest;
  if (!sealedBy)
    throw new ValidationError(`${current.base}: generation ${current.generation} without its _erase/ record`);
  const record = withGeneration(before, current.base, sealedBy, {
    generation,
    prev: sha256Hex(body),
    sealed,
    rowsRemoved: plan.removed,
    erased: plan.erased,
    atMs: now,
    actor,
  });
  await storage.put(eraseRecordPath(current.base), encodeArchiveJson(record));
  crashPoint('erase.after-record');
  await storage.put(sealed.path, data);
  crashPoint('erase.after-data');
  await storage.put(indexPathFor(sealed.path), index);
  crashPoint('erase.after-index');
  const old = supersededPaths(current.base, generation);
  for (const p of old.index) await storage.delete(p);
  crashPoint('erase.after-old-index');
  for (const p of old.data) await storage.delete(p);
  crashPoint('erase.after-old-data');
}

/** Per digest, the files and rows its erasure removed, from the `_erase/` records of `files`. */
async function erasedTotals(
  storage: ArchiveStorage,
  files: ReadonlySet<string>,
  digests: ReadonlySet<string>,
): Promise<Map<string, { files: Set<string>; rows: number }>> {
  const out = new Map<string, { files: Set<string>; rows: number }>();
  for (const file of files) {
    const record = await readRecord(storage, file);
    if (!record) continue;
    for (const g of record.generations) {
      // Only generations that became the file's state (their index exists or was superseded).
      if (g === record.generations.at(-1) && !(await readKeyIndex(storage, g.sealed.path))) continue;
      for (const [digest, rows] of Object.entries(g.erased)) {
        if (!digests.has(digest)) continue;
        const t = out.get(digest) ?? { files: new Set<string>(), rows: 0 };
        t.files.add(record.file);
        t.rows += rows;
        out.set(digest, t);
      }
    }
  }
  return out;
}
