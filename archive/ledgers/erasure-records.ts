import { z } from 'zod';
import { safeSegment } from '../storage/safe-segment';
import { ChainLinkSchema, ERASE_DIR, ERASURE_DIR, FileDigestSchema } from '../storage/layout';

/**
 * The two kinds of document an erasure writes (docs/decisions/0013). Neither holds a key or any
 * data: a key appears only as its digest (`keyDigest` in schemas/).
 */

const digest = z.string().regex(/^[0-9a-f]{64}$/, 'expected a key digest (SHA-256 in hex)');

/**
 * One erased key of one table: the ledger entry, written before any file is touched. From then on
 * the catalog hides the key's rows (restore, replay, `archive show`, audit) and the archiver drops
 * new records of it.
 */
export const ErasureEntrySchema = z.object({
  table: z.string().min(1),
  /** keyDigest(table, key): SHA-256 of the item's message key. */
  digest,
  /** When the erasure was first asked for (a rerun keeps it). */
  erasedAtMs: z.number().int(),
  reason: z.string().nullable(),
  actor: z.string().min(1),
  /** `erasing` until every file holding the key is rewritten; `done` after. */
  state: z.enum(['erasing', 'done']),
  /** Data files (generation 0 names, as manifests name them) rewritten for this key, over all runs. */
  files: z.array(z.string().min(1)),
  /** Rows of this key removed from the archive, over all runs. */
  rowsRemoved: z.number().int().min(0),
});
export type ErasureEntry = z.infer<typeof ErasureEntrySchema>;

export function erasureDir(table: string): string {
  return `${ERASURE_DIR}/${safeSegment(table)}/`;
}

export function erasurePath(table: string, keyDigest: string): string {
  return `${erasureDir(table)}${digest.parse(keyDigest)}.json`;
}

/** One rewrite of a data file: generation `generation` of it, sealed like a manifest seals a file. */
export const GenerationSchema = z.object({
  generation: z.number().int().min(1),
  /** SHA-256 of the generation it replaced (the manifest's seal for generation 1): the chain link. */
  prev: z.string().regex(/^[0-9a-f]{64}$/),
  sealed: FileDigestSchema,
  rowsRemoved: z.number().int().min(0),
  /** Per ledger entry (key digest), the rows of that key it removed. */
  erased: z.record(digest, z.number().int().min(0)),
  atMs: z.number().int(),
  actor: z.string().min(1),
});
export type Generation = z.infer<typeof GenerationSchema>;

/**
 * `_erase/<data file>.json`: every generation of one sealed data file, oldest first. Written before
 * the generation's files, so `archive verify` can follow manifest seal → generation 1 → … and a
 * generation file that no record names is an added file, not an erasure.
 */
export const EraseRecordSchema = z.object({
  file: z.string().min(1),
  /** The complete manifest that sealed generation 0, with the SHA-256 of its bytes. */
  manifest: ChainLinkSchema,
  generations: z.array(GenerationSchema).min(1),
});
export type EraseRecord = z.infer<typeof EraseRecordSchema>;

export function eraseRecordPath(baseDataPath: string): string {
  return `${ERASE_DIR}/${baseDataPath}.json`;
}
