import { sha256Hex } from '../../archive/chain/seal';
import { EraseRecordSchema } from '../../archive/ledgers/erasure-records';
import { listWithIndexes } from '../../archive/storage/key-index';
import { ERASE_DIR, indexPathFor, parseArchiveJson, tablePrefix } from '../../archive/storage/layout';
import { listManifests } from '../../archive/storage/manifests';
import type { ArchiveStorage } from '../../archive/storage/types';

/**
 * `archive move-indexes` (docs/decisions/0033): moves the key indexes an archive written before the `_index/` layout
 * keeps beside its data files to `_index/<data file>.idx.json`, so Athena and Trino read the partition folders as
 * they are. Per index, in this order, so a crash leaves it readable at one place or both and a rerun finishes:
 *   1. the index beside is read and checked against its seal (the manifest's, or the `_erase/` record's for a
 *      rewritten generation): one that does not match is left where it is and reported (verify reports it too);
 *   2. it is written under `_index/` and read back and checked again (an index already there from an interrupted
 *      run is only checked);
 *   3. the index beside is deleted.
 * Sealed manifests are not touched: the seal is of the bytes, wherever they are. Indexes of rolls still `writing`
 * (the archiver's) and of manifests from before sealing are left beside: nothing proves them.
 */

export interface MoveIndexesOptions {
  table?: string;
  dryRun?: boolean;
  onProgress?: (done: number, total: number) => void;
  /** Aborting stops between two indexes. */
  signal?: AbortSignal;
}

export interface MoveIndexesResult {
  /** Key indexes moved (or, in a dry run, that would be), by their place beside. */
  moved: string[];
  /** Indexes left beside, each with why: no seal to check it against, or it does not match its seal. */
  refused: Array<{ path: string; reason: string }>;
  dryRun: boolean;
  stopped: boolean;
}

type IndexSeal = { sha256: string; bytes: number };

/** Per sealed data file (and erasure generation), the digest of its key index. */
async function indexSeals(storage: ArchiveStorage): Promise<Map<string, IndexSeal>> {
  const seals = new Map<string, IndexSeal>();
  for await (const listed of listManifests(storage)) {
    // verify reports an unreadable manifest; an index it would seal stays beside, refused
    if (!('manifest' in listed) || listed.manifest.state !== 'complete') continue;
    for (const d of listed.manifest.digests ?? []) seals.set(d.path, d.index);
  }
  for await (const path of storage.list(`${ERASE_DIR}/`)) {
    const body = await storage.get(path);
    if (!body) continue;
    try {
      const record = parseArchiveJson(EraseRecordSchema, body, path);
      for (const g of record.generations) seals.set(g.sealed.path, g.sealed.index);
    } catch {
      continue;
    }
  }
  return seals;
}

const matches = (body: Buffer | null, seal: IndexSeal): boolean =>
  body !== null && body.length === seal.bytes && sha256Hex(body) === seal.sha256;

/**
 * Move one index (a dry run only reads and checks it); returns why it was not moved, or null once it is under
 * `_index/` and gone from beside.
 */
async function moveOne(
  storage: ArchiveStorage,
  at: { beside: string; dataPath: string; seal: IndexSeal },
  dryRun: boolean,
): Promise<string | null> {
  const { beside, dataPath, seal } = at;
  const body = await storage.get(beside);
  if (body === null) return null; // removed meanwhile (a purge or an erasure)
  if (!matches(body, seal)) return 'does not match its seal (archive verify reports it as altered)';
  const target = indexPathFor(dataPath);
  const there = await storage.get(target);
  if (dryRun)
    return there === null || matches(there, seal) ? null : `${target} is there and does not match the seal`;
  if (there === null) {
    await storage.put(target, body);
    if (!matches(await storage.get(target), seal))
      return `${target} does not read back as sealed after the copy`;
  } else if (!matches(there, seal)) {
    return `${target} is there and does not match the seal`;
  }
  await storage.delete(beside);
  return null;
}

export async function moveIndexes(
  storage: ArchiveStorage,
  options: MoveIndexesOptions = {},
): Promise<MoveIndexesResult> {
  const seals = await indexSeals(storage);
  const prefix = options.table !== undefined ? tablePrefix(options.table) : 'table=';
  const beside: Array<{ path: string; dataPath: string }> = [];
  for await (const p of listWithIndexes(storage, prefix)) if (p.beside) beside.push(p);
  const result: MoveIndexesResult = {
    moved: [],
    refused: [],
    dryRun: options.dryRun ?? false,
    stopped: false,
  };
  for (const [n, { path, dataPath }] of beside.entries()) {
    if (options.signal?.aborted) {
      result.stopped = true;
      break;
    }
    const seal = seals.get(dataPath);
    const refused =
      seal === undefined
        ? 'no seal to check it against (a roll still writing, or a manifest from before sealing)'
        : await moveOne(storage, { beside: path, dataPath, seal }, result.dryRun);
    if (refused === null) result.moved.push(path);
    else result.refused.push({ path, reason: refused });
    options.onProgress?.(n + 1, beside.length);
  }
  return result;
}
