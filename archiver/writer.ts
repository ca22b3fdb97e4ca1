import { forEachLimited } from '../core/concurrency';
import { crashPoint } from '../core/crash-points';
import { digestFiles, sealedManifest, sha256Hex } from '../archive/chain/seal';
import { formatOfFile } from '../archive/format';
import { manifestOf, type RollPlan } from '../archive/roll';
import { deleteKeyIndex } from '../archive/storage/key-index';
import {
  besideIndexPathFor,
  encodeArchiveJson,
  type ChainLink,
  type Manifest,
} from '../archive/storage/layout';
import type { ArchiveStorage } from '../archive/storage/types';
import type { ErrorCode } from '../core/error-codes';
import { InternalError, TtlstreamError } from '../core/errors';

/**
 * Writes one planned roll in the order that makes a crash at any point recoverable:
 *   1. manifest `writing` with the file list      (recovery now knows the exact range to redo)
 *   2. data files                                  (same names on a redo → replaced, never duplicated)
 *   3. their key indexes                           (a catalog entry never points at a missing file)
 *   4. manifest `complete`, sealed: file digests   (only now may the offset be committed)
 *      and the link to the previous complete manifest of the partition (the hash chain)
 * Each put is durable when it resolves. The caller commits the Kafka offset after this returns.
 */

/** Thrown between steps when the roll should not go on (partition revoked, archiver stopping hard). */
export class RollCancelledError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_ROLL_CANCELLED';
  constructor(message = 'roll cancelled') {
    super(message);
  }
}

/** The bytes of a roll's files, in the plan's file order: built before any write of the roll. */
export interface EncodedRoll {
  data: Buffer[];
  index: Buffer[];
}

/**
 * Encode every file of a planned roll in its format (archive/format/; the path says which) and
 * the key indexes as JSON. Pure: no I/O. The partition worker builds the same bytes row by row
 * (RollBuilder); this is the reference the unit tests compare it with, and what writeRoll uses
 * when given only a plan.
 */
export async function encodeRoll(plan: RollPlan): Promise<EncodedRoll> {
  const data = await Promise.all(
    plan.files.map((file) => {
      const writer = formatOfFile(file.path).newWriter();
      for (const row of file.rows) writer.add(row.avro);
      return writer.finish({ ttl: null });
    }),
  );
  const index = plan.files.map((file) => encodeArchiveJson(file.index));
  return { data, index };
}

export interface WriteRollOptions {
  /** The roll's files already encoded (encodeRoll of the same plan); encoded here when absent. */
  encoded?: EncodedRoll;
  /** A `writing` manifest of the same range left by a crash; files it lists that the plan lacks are removed. */
  previous?: Manifest | null;
  /**
   * The partition's previous complete manifest, which the complete manifest links to; null for
   * the partition's first roll. A redo links to the same predecessor as the attempt it redoes.
   */
  prev?: ChainLink | null;
  /** Checked between steps; throw RollCancelledError to stop. */
  checkpoint?: () => void;
  /**
   * Awaited before each manifest write (the two steps another archiver's recovery acts on): the
   * archiver proves here that it still owns the partition in the current group generation.
   */
  fence?: () => Promise<void>;
  /**
   * Files written at once. A roll usually has a handful of files (tables × deletion hours) and a
   * put is mostly waiting for fsync, so all of a step's files go at once.
   */
  concurrency?: number;
}

export interface WriteRollResult {
  files: number;
  bytes: number;
  /** The complete manifest just written: what the partition's next roll links to. */
  link: ChainLink;
}

export async function writeRoll(
  storage: ArchiveStorage,
  plan: RollPlan,
  options: WriteRollOptions = {},
): Promise<WriteRollResult> {
  const checkpoint = options.checkpoint ?? (() => undefined);
  const concurrency = options.concurrency ?? 16;
  const fence = options.fence ?? (async () => undefined);
  let bytes = 0;

  checkpoint();
  await fence();
  checkpoint();
  if (options.previous) {
    // A redo that groups differently (e.g. a duplicate is now skipped, emptying a group) must not
    // leave the earlier attempt's extra files behind: they would hold rows twice. An attempt by a
    // version before docs/decisions/0033 wrote its indexes beside the data files: those go too, so
    // no stale index is left beside a file this redo indexes under `_index/`.
    const planned = new Set(plan.files.map((f) => f.path));
    await forEachLimited(options.previous.files, concurrency, async (path) => {
      if (planned.has(path)) return storage.delete(besideIndexPathFor(path));
      await deleteKeyIndex(storage, path);
      await storage.delete(path);
    });
  }

  const encoded = options.encoded ?? (await encodeRoll(plan));
  if (encoded.data.length !== plan.files.length || encoded.index.length !== plan.files.length)
    throw new InternalError(`encoded roll has ${encoded.data.length} files, its plan ${plan.files.length}`);
  const writing = encodeArchiveJson(manifestOf(plan, 'writing'));
  await storage.put(plan.manifestPath, writing);
  bytes += writing.length;
  crashPoint('archiver.after-manifest-writing');

  checkpoint();
  await forEachLimited(
    plan.files.map((file, i) => ({ file, body: encoded.data[i] as Buffer })),
    concurrency,
    async ({ file, body }) => {
      checkpoint();
      await storage.put(file.path, body);
      bytes += body.length;
    },
  );
  crashPoint('archiver.after-data-files');

  checkpoint();
  await forEachLimited(
    plan.files.map((file, i) => ({ file, body: encoded.index[i] as Buffer })),
    concurrency,
    async ({ file, body }) => {
      await storage.put(file.indexPath, body);
      bytes += body.length;
    },
  );
  crashPoint('archiver.after-index-files');

  checkpoint();
  await fence();
  checkpoint();
  const complete = encodeArchiveJson(
    sealedManifest(plan, options.prev ?? null, digestFiles(plan, encoded.data, encoded.index)),
  );
  await storage.put(plan.manifestPath, complete);
  bytes += complete.length;
  crashPoint('archiver.after-manifest-complete');

  return { files: plan.files.length, bytes, link: { path: plan.manifestPath, sha256: sha256Hex(complete) } };
}
