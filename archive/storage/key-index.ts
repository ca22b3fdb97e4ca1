import { INDEX_DIR, dataPathOfIndex, indexListingPrefix, indexPathsOf, isBesideIndexPath } from './layout';
import type { ArchiveStorage } from './types';

/**
 * Finding a data file's key index at either of its places (docs/decisions/0033): `_index/<data file>.idx.json`,
 * where rolls write it now, or beside the data file, where archives written before keep it until
 * `archive move-indexes` moves it. The seal (a manifest's or an `_erase/` record's index digest) proves the bytes
 * wherever they are: the place is not sealed.
 */

/** A key index as stored: the path it was found at and its bytes. */
export interface StoredKeyIndex {
  path: string;
  body: Buffer;
}

/** The data file's key index, from `_index/` or else beside the data file; null when neither holds it. */
export async function readKeyIndex(
  storage: ArchiveStorage,
  dataPath: string,
): Promise<StoredKeyIndex | null> {
  for (const path of indexPathsOf(dataPath)) {
    const body = await storage.get(path);
    if (body !== null) return { path, body };
  }
  return null;
}

/** Remove the data file's key index at both places (the new one first: the place readers look first). */
export async function deleteKeyIndex(storage: ArchiveStorage, dataPath: string): Promise<void> {
  for (const path of indexPathsOf(dataPath)) await storage.delete(path);
}

/** One path of the data area's listing (`listWithIndexes`). */
export interface AreaPath {
  /** The object's path. */
  path: string;
  /** The data file it is, or whose key index it is. */
  dataPath: string;
  isIndex: boolean;
  /** A key index beside its data file (an archive written before docs/decisions/0033). */
  beside: boolean;
}

/**
 * Every data file and key index under a data listing prefix (`table=…`): two listings, the prefix and its
 * `_index/` twin, merged into the order one listing of the old layout gave (a data file, then its index, then its
 * next generation), so a file's paths stay adjacent. Costs two listings of the same span, never one of the archive.
 */
export async function* listWithIndexes(storage: ArchiveStorage, prefix: string): AsyncIterable<AreaPath> {
  const sortKey = (path: string): string =>
    path.startsWith(`${INDEX_DIR}/`) ? path.slice(INDEX_DIR.length + 1) : path;
  const data = storage.list(prefix)[Symbol.asyncIterator]();
  const index = storage.list(indexListingPrefix(prefix))[Symbol.asyncIterator]();
  try {
    yield* merge(data, index, sortKey);
  } finally {
    // A consumer that stops early (a `break`) ends both listings.
    await Promise.all([data.return?.(), index.return?.()]);
  }
}

async function* merge(
  data: AsyncIterator<string>,
  index: AsyncIterator<string>,
  sortKey: (path: string) => string,
): AsyncIterable<AreaPath> {
  let a = await data.next();
  let b = await index.next();
  for (;;) {
    let path: string;
    if (!a.done && (b.done || sortKey(a.value) <= sortKey(b.value))) {
      path = a.value;
      a = await data.next();
    } else if (!b.done) {
      path = b.value;
      b = await index.next();
    } else return;
    const ofIndex = dataPathOfIndex(path);
    yield {
      path,
      dataPath: ofIndex ?? path,
      isIndex: ofIndex !== null,
      beside: isBesideIndexPath(path),
    };
  }
}
