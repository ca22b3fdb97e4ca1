import { CompactionRecordSchema } from '../ledgers/compaction-records';
import { EraseRecordSchema, eraseRecordPath } from '../ledgers/erasure-records';
import {
  ManifestSchema,
  compactionRecordPath,
  hourFolderOf,
  pad20,
  parseArchiveJson,
  parseDataFilePath,
  MANIFEST_DIR,
  type ChainLink,
  type FileDigest,
} from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';
import { sha256Hex } from './seal';

/**
 * The seal of one generation of a data file, found from its name alone (one or two reads, never a listing): a
 * roll's file is sealed by the complete manifest of its roll (`_manifest/<topic>/<partition>/<first>-<last>.json`),
 * a compacted file by its compaction's record (docs/decisions/0037), an erasure's generation by the file's
 * `_erase/` record. What a compaction replaces and an erasure rewrites is proved against it.
 */

export interface SealOf {
  /** The document that seals the generation, with the SHA-256 of its bytes. */
  sealedBy: ChainLink;
  sealed: FileDigest;
}

/** Null when nothing seals it (a roll still `writing`, a manifest from before sealing, a record not yet whole). */
export async function sealOf(
  storage: ArchiveStorage,
  base: string,
  generation: number,
): Promise<SealOf | null> {
  const parsed = parseDataFilePath(base);
  if (!parsed || parsed.base !== base) return null;
  if (generation > 0) {
    const path = eraseRecordPath(base);
    const body = await storage.get(path);
    if (!body) return null;
    const g = parseArchiveJson(EraseRecordSchema, body, path).generations.find(
      (x) => x.generation === generation,
    );
    return g ? { sealedBy: { path, sha256: sha256Hex(body) }, sealed: g.sealed } : null;
  }
  if (parsed.compaction) {
    const path = compactionRecordPath(hourFolderOf(base), parsed.compaction.number);
    const body = await storage.get(path);
    if (!body) return null;
    const sealed = parseArchiveJson(CompactionRecordSchema, body, path).files[parsed.compaction.file - 1];
    return sealed?.path === base ? { sealedBy: { path, sha256: sha256Hex(body) }, sealed } : null;
  }
  const path = `${MANIFEST_DIR}/${parsed.topicSegment}/${parsed.partition}/${pad20(parsed.first)}-${pad20(parsed.last)}.json`;
  const body = await storage.get(path);
  if (!body) return null;
  const manifest = parseArchiveJson(ManifestSchema, body, path);
  if (manifest.state !== 'complete') return null;
  const sealed = manifest.digests?.find((d) => d.path === base);
  return sealed ? { sealedBy: { path, sha256: sha256Hex(body) }, sealed } : null;
}
