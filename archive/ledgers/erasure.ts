import type { AttributeMap } from '../../schemas/attribute-value';
import { keyDigest } from '../../schemas/canonical';
import { ERASURE_DIR, encodeArchiveJson, parseArchiveJson } from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';
import { ErasureEntrySchema, erasureDir, erasurePath, type ErasureEntry } from './erasure-records';

/**
 * The erasure ledger (`_erasure/<table>/<digest>.json`): which keys of a table are erased. The
 * catalog reads it once per table, so every reader that goes through the catalog honours it.
 */

/** The digest a key index row's key (canonical DynamoDB JSON) stands for: THE key digest of schemas/. */
export function digestOfIndexKey(table: string, canonicalKey: string): string {
  return keyDigest(table, JSON.parse(canonicalKey) as AttributeMap);
}

/** Digests of every erased key of the table (an entry in any state: the key is erased from its first write). */
export async function readErasedDigests(storage: ArchiveStorage, table: string): Promise<Set<string>> {
  const out = new Set<string>();
  const dir = erasureDir(table);
  for await (const path of storage.list(dir)) {
    const m = /^([0-9a-f]{64})\.json$/.exec(path.slice(dir.length));
    // The name is the digest: a reader need not parse every entry (the archiver rereads the ledger often).
    if (m) out.add(m[1] as string);
  }
  return out;
}

/**
 * Digests of every erased key of every table. A digest names its table (it hashes the message
 * key), so one set serves every table: what the archiver checks messages and rolls against.
 */
export async function readAllErasedDigests(storage: ArchiveStorage): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const path of storage.list(`${ERASURE_DIR}/`)) {
    const m = /\/([0-9a-f]{64})\.json$/.exec(path);
    if (m) out.add(m[1] as string);
  }
  return out;
}

export async function readErasureEntry(
  storage: ArchiveStorage,
  table: string,
  digest: string,
): Promise<ErasureEntry | null> {
  const path = erasurePath(table, digest);
  const body = await storage.get(path);
  return body ? parseArchiveJson(ErasureEntrySchema, body, path) : null;
}

export async function writeErasureEntry(storage: ArchiveStorage, entry: ErasureEntry): Promise<void> {
  await storage.put(
    erasurePath(entry.table, entry.digest),
    encodeArchiveJson(ErasureEntrySchema.parse(entry)),
  );
}
