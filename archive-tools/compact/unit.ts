import { forEachLimited } from '../../core/concurrency';
import { crashPoint } from '../../core/crash-points';
import { ValidationError } from '../../core/errors';
import { HOUR_MS } from '../../archive/catalog/range';
import { compareVersions } from '../../archive/catalog/order';
import { openCatalog, type CatalogFile } from '../../archive/catalog';
import { sealOf, type SealOf } from '../../archive/chain/seal-of';
import { sha256Hex } from '../../archive/chain/seal';
import { digestOfIndexKey, readErasedDigests } from '../../archive/ledgers/erasure';
import { mergeDataFiles, type MergeOrder, type MergeSource } from '../../archive/format/merge';
import { compareByteArrays } from '../../archive/format/parquet-stats';
import type { CompressionLevels } from '../../archive/format/types';
import { listWithIndexes, readKeyIndex } from '../../archive/storage/key-index';
import {
  compactListingPrefix,
  compactedFilePath,
  compactionRecordPath,
  encodeArchiveJson,
  indexPathFor,
  indexPathsOf,
  parseArchiveJson,
  parseCompactPath,
  parseDataFilePath,
  stagedPathFor,
  type DataFormat,
  type FileDigest,
  type KeyIndex,
  type KeyIndexRow,
} from '../../archive/storage/layout';
import type { ArchiveStorage } from '../../archive/storage/types';
import type { HeldLock } from '../../archive/lock';
import { parseKeyIndexRows } from '../../archive/storage/key-index-rows';
import { CompactionRecordSchema, type CompactionRecord } from '../../archive/ledgers/compaction-records';

/**
 * One hour of one table compacted (docs/decisions/0037), in the order that keeps every reader's view whole and
 * the archive provable after a SIGKILL at any step:
 *   1. the record `_compact/<hour>/<n>.json`, naming each replaced file with its seal, and how many it writes;
 *   2. per new file: its data and key index staged under `_compact/<hour>/<n>/`, read back and checked, its seal
 *      added to the record (the record is whole before step 3);
 *   3. the key indexes moved to `_index/` (the switch: once all are there, readers take the new files, from
 *      staging until step 5, and no longer the replaced ones);
 *   4. the replaced files' key indexes (at either place), then their data files, every generation;
 *   5. the new data files moved into the hour folder.
 * Engines reading the folder see the replaced files until step 4 and the new ones from step 5: never both. A rerun
 * finishes a whole record from where it stopped, and starts again one that is not whole.
 */

export interface UnitOptions {
  /** The archive's current format: what the new files are written in. */
  format: DataFormat;
  /** Data-file bytes a new file holds at most (inputs are packed by their sealed sizes). */
  targetBytes: number;
  /** Rows a new file holds at most (inputs are packed by their sealed rows too). */
  maxRows: number;
  levels: CompressionLevels;
  actor: string;
  now: () => number;
  /** The table's lock, checked before every step that changes the archive. */
  lock: HeldLock | null;
}

export interface UnitResult {
  hour: string;
  table: string;
  /** The compaction written, or null when there was nothing to compact. */
  number: number | null;
  inputs: number;
  outputs: number;
  bytesIn: number;
  bytesOut: number;
  rowsIn: number;
  rowsOut: number;
  /** An interrupted compaction of the hour was finished, or a partial one cleared, first. */
  recovered: boolean;
  /** Roll files left for a later run: nothing seals them yet (their roll is still being written). */
  unsealed: string[];
}

interface Input extends SealOf {
  file: CatalogFile;
}

const stagedIndexOf = (finalPath: string): string => `${stagedPathFor(finalPath)}.idx.json`;

/** Reads or removals of an hour's many small objects in flight at once (S3 is mostly waiting). */
const IO_AT_ONCE = 16;

export async function compactHour(
  storage: ArchiveStorage,
  unit: { hour: string; table: string; startMs: number },
  options: UnitOptions,
): Promise<UnitResult> {
  const check = (): void => options.lock?.assertValid();
  const { reuse, last, recovered } = await recoverHour(storage, unit.hour, check);
  const result: UnitResult = {
    hour: unit.hour,
    table: unit.table,
    number: null,
    inputs: 0,
    outputs: 0,
    bytesIn: 0,
    bytesOut: 0,
    rowsIn: 0,
    rowsOut: 0,
    recovered,
    unsealed: [],
  };
  const inputs = await inputsOf(storage, unit, options, result.unsealed);
  if (inputs.length === 0) {
    // A record cleared above and not taken again: nothing of it is left to prove.
    if (reuse !== null) await storage.delete(compactionRecordPath(unit.hour, reuse));
    return result;
  }
  const record = await writeCompaction(storage, unit, inputs, reuse ?? last + 1, options);
  return {
    ...result,
    number: record.number,
    inputs: inputs.length,
    outputs: record.outputs,
    bytesIn: inputs.reduce((n, i) => n + i.sealed.bytes, 0),
    bytesOut: record.files.reduce((n, f) => n + f.bytes, 0),
    rowsIn: record.rows.in,
    rowsOut: record.rows.out,
  };
}

/** Compaction `number` of the hour over `inputs`, steps 1 to 5; returns its (whole) record. */
async function writeCompaction(
  storage: ArchiveStorage,
  unit: { hour: string; table: string },
  inputs: readonly Input[],
  number: number,
  options: UnitOptions,
): Promise<CompactionRecord> {
  const check = (): void => options.lock?.assertValid();
  const groups = packGroups(inputs, options);
  const record: CompactionRecord = {
    table: unit.table,
    hour: unit.hour,
    number,
    format: options.format,
    replaced: inputs.map((i) => ({
      base: i.file.base,
      generation: i.file.generation,
      sealedBy: i.sealedBy,
      sealed: i.sealed,
    })),
    outputs: groups.length,
    files: [],
    erased: {},
    rows: { in: inputs.reduce((n, i) => n + i.sealed.rows, 0), out: 0 },
    atMs: options.now(),
    actor: options.actor,
  };
  const recordPath = compactionRecordPath(unit.hour, number);
  check();
  await storage.put(recordPath, encodeArchiveJson(record));
  crashPoint('compact.after-record');
  const erased = await readErasedDigests(storage, unit.table);
  for (const [i, group] of groups.entries()) {
    const path = compactedFilePath(unit.hour, { number, file: i + 1, files: groups.length }, options.format);
    const built = await buildFile(storage, unit.table, path, group, erased, options);
    check();
    await stageFile(storage, path, built);
    record.files.push(built.digest);
    record.rows.out += built.digest.rows;
    for (const [d, n] of Object.entries(built.erased)) record.erased[d] = (record.erased[d] ?? 0) + n;
    await storage.put(recordPath, encodeArchiveJson(record));
    crashPoint('compact.after-staged');
  }
  const staged = new Set(record.files.flatMap((f) => [stagedPathFor(f.path), stagedIndexOf(f.path)]));
  await finishRecord(storage, record, staged, check);
  return record;
}

/**
 * The hour's current files to compact, each with its seal: every roll's file a complete manifest (or its erasure)
 * seals, and the hour's compacted files too when all of them fit one target-sized file.
 */
async function inputsOf(
  storage: ArchiveStorage,
  unit: { hour: string; table: string; startMs: number },
  target: { targetBytes: number; maxRows: number },
  unsealed: string[],
): Promise<Input[]> {
  const { startMs } = unit;
  const rolls: Input[] = [];
  const compacted: Input[] = [];
  const files: CatalogFile[] = [];
  for await (const file of openCatalog(storage).listFiles(unit.table, {
    fromMs: startMs,
    toMs: startMs + HOUR_MS,
  }))
    files.push(file);
  // One read each (a manifest, a record): many at once, as an hour has hundreds of rolls.
  await forEachLimited(files, IO_AT_ONCE, async (file) => {
    const seal = file.indexPath === null ? null : await sealOf(storage, file.base, file.generation);
    if (!seal) {
      if (!file.compaction) unsealed.push(file.base);
      return;
    }
    (file.compaction ? compacted : rolls).push({ file, ...seal });
  });
  if (rolls.length === 0) return [];
  const all = packGroups([...compacted, ...rolls], target).length === 1 ? [...compacted, ...rolls] : rolls;
  return all.sort((a, b) => (a.file.base < b.file.base ? -1 : 1));
}

/**
 * Inputs in order, packed into files of at most `targetBytes` and `maxRows` (a larger input gets a file of its own):
 * a file's rows are held in memory while it is built, so the rows bound the memory where small rows would not.
 */
export function packGroups<T extends { sealed: { bytes: number; rows: number } }>(
  inputs: readonly T[],
  target: { targetBytes: number; maxRows: number },
): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let size = 0;
  let rows = 0;
  for (const input of inputs) {
    const over = size + input.sealed.bytes > target.targetBytes || rows + input.sealed.rows > target.maxRows;
    if (current.length > 0 && over) {
      groups.push(current);
      current = [];
      size = 0;
      rows = 0;
    }
    current.push(input);
    size += input.sealed.bytes;
    rows += input.sealed.rows;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

interface BuiltFile {
  data: Buffer;
  index: Buffer;
  digest: FileDigest;
  erased: Record<string, number>;
}

/**
 * The output's key index rows in key order (then deletion order), without rows of erased keys, and where each
 * comes from: `order.at[s][r]` is the output row of row r of input s.
 */
function orderRows(
  table: string,
  indexes: readonly KeyIndex[],
  inputs: readonly Input[],
  erasedDigests: ReadonlySet<string>,
): { rows: KeyIndexRow[]; order: MergeOrder; erased: Record<string, number> } {
  const erased: Record<string, number> = {};
  const rows: KeyIndexRow[] = [];
  // Parallel to `rows`: the input and the input's row each came from.
  const from: number[] = [];
  const at = inputs.map((i) => new Int32Array(i.sealed.rows).fill(-1));
  for (const [s, index] of indexes.entries()) {
    const path = (inputs[s] as Input).file.path;
    const taken = at[s] as Int32Array;
    for (const r of index.rows) {
      if (r.row >= taken.length)
        throw new ValidationError(
          `${path}: its key index names row ${r.row} of ${taken.length}; not compacted`,
        );
      if (taken[r.row] !== -1)
        throw new ValidationError(`${path}: its key index names row ${r.row} twice; not compacted`);
      taken[r.row] = -2; // named (even if erased below): a second entry for it is refused
      if (erasedDigests.size > 0) {
        const d = digestOfIndexKey(table, r.key);
        if (erasedDigests.has(d)) {
          erased[d] = (erased[d] ?? 0) + 1;
          continue;
        }
      }
      rows.push({
        key: r.key,
        eventID: r.eventID,
        kind: r.kind,
        ...(r.retractsEventID !== undefined ? { retractsEventID: r.retractsEventID } : {}),
        deletedAtMs: r.deletedAtMs,
        sequenceNumber: r.sequenceNumber,
        row: r.row,
        topic: r.topic ?? (index.topic as string),
        partition: r.partition ?? (index.partition as number),
      });
      from.push(s);
    }
  }
  const sorted = rows.map((_, n) => n);
  sorted.sort((a, b) => {
    const x = rows[a] as KeyIndexRow;
    const y = rows[b] as KeyIndexRow;
    return compareByteArrays(x.key, y.key) || compareVersions(x, y);
  });
  for (const taken of at) for (let r = 0; r < taken.length; r++) if (taken[r] === -2) taken[r] = -1;
  const out = sorted.map((n, row) => {
    const r = rows[n] as KeyIndexRow;
    (at[from[n] as number] as Int32Array)[r.row] = row;
    r.row = row;
    return r;
  });
  return { rows: out, order: { rows: out.length, at, eventIDs: out.map((r) => r.eventID) }, erased };
}

/** A new file of the inputs' rows, in key order (then deletion order), without rows of erased keys. */
async function buildFile(
  storage: ArchiveStorage,
  table: string,
  path: string,
  inputs: readonly Input[],
  erasedDigests: ReadonlySet<string>,
  options: UnitOptions,
): Promise<BuiltFile> {
  // The key indexes first (they give the order), then each data file as the merge reaches it.
  const indexes = new Array<KeyIndex>(inputs.length);
  await forEachLimited([...inputs.keys()], IO_AT_ONCE, async (s) => {
    indexes[s] = await readIndexChecked(storage, inputs[s] as Input);
  });
  const { rows, order, erased } = orderRows(table, indexes, inputs, erasedDigests);
  indexes.fill(undefined as never); // their rows live on in `rows`; the rest goes
  const sources: MergeSource[] = inputs.map((i) => ({
    path: i.file.path,
    read: () => readDataChecked(storage, i),
  }));
  const data = await mergeDataFiles(options.format, sources, order, options.levels);
  const parsed = parseDataFilePath(path);
  const index: KeyIndex = {
    file: path,
    table,
    ...(parsed?.compaction ? { compaction: parsed.compaction } : {}),
    rows,
  };
  const indexBody = encodeArchiveJson(index);
  return {
    data,
    index: indexBody,
    erased,
    digest: {
      path,
      sha256: sha256Hex(data),
      bytes: data.length,
      rows: rows.length,
      firstEventID: rows[0]?.eventID ?? null,
      lastEventID: rows.at(-1)?.eventID ?? null,
      index: { sha256: sha256Hex(indexBody), bytes: indexBody.length },
    },
  };
}

/** An input's data file, checked against its seal: what does not match is never compacted. */
async function readDataChecked(storage: ArchiveStorage, input: Input): Promise<Buffer> {
  const { file, sealed } = input;
  const body = await storage.get(file.path);
  if (!body || sha256Hex(body) !== sealed.sha256)
    throw new ValidationError(
      `${file.path}: ${body ? 'differs from' : 'missing, yet named by'} its seal; not compacted (run archive verify)`,
    );
  return body;
}

/** An input's key index, checked against its seal. */
async function readIndexChecked(storage: ArchiveStorage, input: Input): Promise<KeyIndex> {
  const { file, sealed } = input;
  const found = await readKeyIndex(storage, file.path);
  if (!found || sha256Hex(found.body) !== sealed.index.sha256)
    throw new ValidationError(
      `${file.path}: its key index differs from its seal; not compacted (run archive verify)`,
    );
  return parseKeyIndexRows(found.body, found.path);
}

/** The file's data and key index put in the staging area and read back: they must be what was sealed. */
async function stageFile(storage: ArchiveStorage, path: string, built: BuiltFile): Promise<void> {
  const data = stagedPathFor(path);
  const index = stagedIndexOf(path);
  await storage.put(data, built.data);
  await storage.put(index, built.index);
  const [readData, readIndex] = await Promise.all([storage.get(data), storage.get(index)]);
  if (!readData || sha256Hex(readData) !== built.digest.sha256)
    throw new ValidationError(`${data}: does not read back as written`);
  if (!readIndex || sha256Hex(readIndex) !== built.digest.index.sha256)
    throw new ValidationError(`${index}: does not read back as written`);
}

/**
 * Steps 3 to 5 of a whole record, from wherever a run stopped (`staged`: its staged files still there): each index
 * still staged moved to `_index/`, the replaced files' remains removed (indexes first), each staged data file moved
 * into the folder while its generation 0 is the file's current one (its index in place, no data file there yet),
 * else dropped (a move that copied it already, or an erasure that rewrote it since).
 */
async function finishRecord(
  storage: ArchiveStorage,
  record: CompactionRecord,
  staged: ReadonlySet<string>,
  check: () => void,
): Promise<void> {
  for (const f of record.files) {
    if (!staged.has(stagedIndexOf(f.path))) continue;
    check();
    await storage.move(stagedIndexOf(f.path), indexPathFor(f.path));
    crashPoint('compact.after-index');
  }
  const replaced = new Set(record.replaced.map((r) => r.base));
  const remains = { index: [] as string[], data: [] as string[] };
  const present = new Set<string>();
  for await (const p of listWithIndexes(storage, record.hour)) {
    present.add(p.path);
    const parsed = parseDataFilePath(p.dataPath);
    if (parsed && replaced.has(parsed.base)) (p.isIndex ? remains.index : remains.data).push(p.path);
  }
  if (remains.index.length + remains.data.length > 0) check();
  await forEachLimited(remains.index, IO_AT_ONCE, (p) => storage.delete(p));
  crashPoint('compact.after-old-index');
  await forEachLimited(remains.data, IO_AT_ONCE, (p) => storage.delete(p));
  crashPoint('compact.after-old-data');
  for (const f of record.files) {
    const data = stagedPathFor(f.path);
    if (!staged.has(data)) continue;
    check();
    const current = !present.has(f.path) && indexPathsOf(f.path).some((p) => present.has(p));
    if (current) await storage.move(data, f.path);
    else await storage.delete(data);
    crashPoint('compact.after-move');
  }
}

/**
 * What earlier runs left in the hour: each whole record finished, a record not yet whole cleared (its staged
 * files removed; its number is reused). Returns the number to reuse, the highest number, and whether anything
 * was done.
 */
async function recoverHour(
  storage: ArchiveStorage,
  hour: string,
  check: () => void,
): Promise<{ reuse: number | null; last: number; recovered: boolean }> {
  const numbers = new Set<number>();
  const staged = new Set<string>();
  for await (const p of storage.list(compactListingPrefix(hour))) {
    const parsed = parseCompactPath(p);
    if (!parsed) continue;
    numbers.add(parsed.number);
    if (parsed.staged) staged.add(p);
  }
  let reuse: number | null = null;
  let recovered = false;
  for (const n of [...numbers].sort((a, b) => a - b)) {
    const path = compactionRecordPath(hour, n);
    const body = await storage.get(path);
    const mine = [...staged].filter((p) => parseCompactPath(p)?.number === n);
    const record = body ? parseArchiveJson(CompactionRecordSchema, body, path) : null;
    if (record && record.files.length === record.outputs) {
      const before = mine.length;
      await finishRecord(storage, record, new Set(mine), check);
      recovered ||= before > 0;
      continue;
    }
    // Not whole: nothing of it was switched to. Its staged files go; its number is taken again.
    check();
    for (const p of mine) await storage.delete(p);
    reuse = n;
    recovered = true;
  }
  return { reuse, last: Math.max(0, ...numbers), recovered };
}
