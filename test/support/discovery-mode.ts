import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { EXPIRY_SHARD_ATTRIBUTE, expiryShardOf } from '../../policy';
import type { Counts, TtlModel } from './ground-truth';

/**
 * The scanner's two ways of finding expired items (docs/decisions/0011): a leased parallel Scan of the whole table,
 * or queries of the expiry index per shard. The fault suites run in both (decision 0011).
 */
export type DiscoveryMode = 'scan' | 'index';
export const DISCOVERY_MODES: readonly DiscoveryMode[] = ['scan', 'index'];

/** Index shards of the fault suites' tables: fewer than scanner processes × 2, so a kill always orphans some. */
export const FAULT_INDEX_SHARDS = 4;

/**
 * The model of a table in index mode: its settings carry `expiryIndex`, and the recorded images carry the shard
 * attribute the writers' stamp adds (the server stores it, the pipeline deletes and publishes it).
 */
export function indexedModel(model: TtlModel, shards = FAULT_INDEX_SHARDS): TtlModel {
  return {
    ...model,
    settings: { ...model.settings, expiryIndex: { shards } },
    stampImage: (image) => ({
      ...image,
      [EXPIRY_SHARD_ATTRIBUTE]: { N: String(expiryShardOf({ pk: image.pk as AttributeValue }, shards)) },
    }),
  };
}

/**
 * The seed counts in a mode. With the index, the TTL categories of another type (S, NULL, BOOL) are left out: a GSI
 * refuses a write whose index key has another type (docs/decisions/0011), so they cannot exist in such a table.
 */
export function countsInMode(mode: DiscoveryMode, counts: Counts): Counts {
  if (mode === 'scan') return counts;
  return { ...counts, 'malformed-s': 0, 'malformed-null': 0, 'malformed-bool': 0 };
}

/** The seed of a scenario in `mode`: other tables in index mode, not the same run twice. */
export function seedInMode(mode: DiscoveryMode, seed: number): number {
  return mode === 'index' ? seed + 500 : seed;
}
