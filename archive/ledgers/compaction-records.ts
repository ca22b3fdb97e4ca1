import { z } from 'zod';
import { ChainLinkSchema, DATA_FORMATS, FileDigestSchema } from '../storage/layout';

/**
 * `_compact/<hour folder>/<n6>.json`: compaction n of an hour (docs/decisions/0037), written before any of its
 * files, as an `_erase/` record is before an erasure's, and whole before any of them is switched to. It names every file it replaces with the seal of the
 * generation it read (so `archive verify` follows a manifest's seal, or an erasure generation's, to it) and seals
 * every file it writes (so verify checks those as it checks a roll's). Holds no key and no data.
 */

const digest = z.string().regex(/^[0-9a-f]{64}$/, 'expected a key digest (SHA-256 in hex)');

export const ReplacedFileSchema = z.object({
  /** The file as its seal first named it (generation 0): a roll's name, or an earlier compaction's. */
  base: z.string().min(1),
  /** The generation read: 0, or an erasure's rewrite. */
  generation: z.number().int().min(0),
  /** The document sealing that generation (complete manifest, `_erase/` record or compaction record). */
  sealedBy: ChainLinkSchema,
  /** That generation's seal, as the document gives it (its path is the generation's). */
  sealed: FileDigestSchema,
});
export type ReplacedFile = z.infer<typeof ReplacedFileSchema>;

export const CompactionRecordSchema = z.object({
  table: z.string().min(1),
  /** `table=…/date=…/hour=…/`. */
  hour: z.string().min(1),
  number: z.number().int().min(1),
  format: z.enum(DATA_FORMATS),
  replaced: z.array(ReplacedFileSchema).min(1),
  /** How many files it writes. */
  outputs: z.number().int().min(1),
  /**
   * The files written, in order (file i is files[i - 1]), each sealed as a manifest seals a roll's: added one by
   * one as each is staged and read back, so the record is whole (`outputs` seals) before any of them is switched to.
   */
  files: z.array(FileDigestSchema),
  /** Per key digest in the erasure ledger when the compaction read it, rows of that key left out. */
  erased: z.record(digest, z.number().int().min(1)),
  /** Rows of the replaced files; rows written. in − Σ erased = out, which verify checks. */
  rows: z.object({ in: z.number().int().min(0), out: z.number().int().min(0) }),
  atMs: z.number().int(),
  actor: z.string().min(1),
});
export type CompactionRecord = z.infer<typeof CompactionRecordSchema>;
