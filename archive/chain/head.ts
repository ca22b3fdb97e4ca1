import type { Logger } from '../../core/logger';
import { readPartitionHistory, type ManifestEntry } from '../history';
import type { ChainLink } from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';
import { sha256Hex } from './seal';
import { DataError } from '../../core/errors';

/**
 * The link a roll starting at `first` names as its predecessor: the complete manifest of the
 * partition with the highest `last` below `first` (a gap between them is a recorded loss), or
 * null when there is none (the partition's first roll).
 *
 * Looked up once per partition worker (afterwards the worker carries the link of the roll it just
 * wrote). The listing is the recovery's: the blocks around `first`; only when those hold no
 * predecessor and `first` is not 0 is the whole partition listed, so a loss longer than a block
 * does not start a new chain.
 */
export async function chainHeadBefore(
  storage: ArchiveStorage,
  topic: string,
  partition: number,
  first: bigint,
  logger: Logger,
): Promise<ChainLink | null> {
  const pick = (complete: ManifestEntry[]): ManifestEntry | null => {
    let best: ManifestEntry | null = null;
    for (const e of complete) if (e.last < first && (best === null || e.last > best.last)) best = e;
    return best;
  };
  let found = pick((await readPartitionHistory(storage, topic, partition, first, logger)).complete);
  if (!found && first > 0n)
    found = pick((await readPartitionHistory(storage, topic, partition, null, logger)).complete);
  if (!found) return null;
  const body = await storage.get(found.path);
  // Listed a moment ago and manifests are never deleted: gone now means someone removed it.
  if (!body) throw new DataError(`archive manifest ${found.path} vanished while linking the chain`);
  return { path: found.path, sha256: sha256Hex(body) };
}
