import { createHash } from 'node:crypto';
import { manifestOf, type RollPlan } from '../roll';
import type { ChainLink, FileDigest, Manifest } from '../storage/layout';

/**
 * Pure: what a complete manifest seals (docs/decisions/0010). Each data file and key index is
 * digested as written, and the manifest names its predecessor's digest, so the complete manifests
 * of a partition form a hash chain in the order the archiver wrote them.
 */

export function sha256Hex(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The digests of a roll's files, in the plan's file order (the bytes given are what is put). */
export function digestFiles(plan: RollPlan, data: Buffer[], index: Buffer[]): FileDigest[] {
  return plan.files.map((file, i) => {
    const body = data[i] as Buffer;
    const idx = index[i] as Buffer;
    return {
      path: file.path,
      sha256: sha256Hex(body),
      bytes: body.length,
      rows: file.summary.rows,
      firstEventID: file.summary.firstEventID,
      lastEventID: file.summary.lastEventID,
      index: { sha256: sha256Hex(idx), bytes: idx.length },
    };
  });
}

/** The complete manifest of a roll, linked to `prev` (null: the partition's first roll). */
export function sealedManifest(plan: RollPlan, prev: ChainLink | null, digests: FileDigest[]): Manifest {
  return { ...manifestOf(plan, 'complete'), prev, digests };
}
