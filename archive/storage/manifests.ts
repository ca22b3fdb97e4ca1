import { MANIFEST_DIR, ManifestSchema, parseArchiveJson, type Manifest } from './layout';
import type { ArchiveStorage } from './types';

/**
 * A manifest as listed: its path, its bytes (their SHA-256 is what a chain link and a seal name) and its content;
 * or, when it vanished while listed or does not parse, why (`unreadable`): `archive verify` reports it, the tools
 * that act on seals (erase, purge, move-indexes) skip it.
 */
export type ListedManifest =
  | { path: string; body: Buffer; manifest: Manifest }
  | { path: string; body: Buffer | null; unreadable: string };

/** Every manifest of the archive, read one at a time in listing order. */
export async function* listManifests(storage: ArchiveStorage): AsyncGenerator<ListedManifest> {
  for await (const path of storage.list(`${MANIFEST_DIR}/`)) {
    const body = await storage.get(path);
    if (body === null) {
      yield { path, body, unreadable: 'vanished while listed' };
      continue;
    }
    let read: ListedManifest;
    try {
      read = { path, body, manifest: parseArchiveJson(ManifestSchema, body, path) };
    } catch (err) {
      read = { path, body, unreadable: (err as Error).message };
    }
    yield read;
  }
}
