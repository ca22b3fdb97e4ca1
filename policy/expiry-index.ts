import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { createHash } from 'node:crypto';
import { NUMBER_PATTERN } from '../schemas/attribute-value';
import { canonicalNumber } from '../schemas/canonical';
import { numberTextOf } from './attribute-value';
import { COSMOS_MAX_TTL_SECONDS, FIVE_YEARS_MS } from './constants';
import { decimalToNumber, parseDecimal } from './decimal';
import type { TableTtlSettings } from './settings';
import type { Item } from './types';

/**
 * The expiry index (decision 0011): a sparse GSI, partition key = a small shard number derived from the item's key,
 * sort key = the item's expiry instant, so the scanner finds what expired by querying each shard for
 * "expiry ≤ now" instead of reading the whole table. Every name the index uses is here, once.
 */

/** The GSI's name on every table that opts in. */
export const EXPIRY_INDEX_NAME = 'ttlstream_expiry';
/** The GSI's partition key: N, 0..shards-1. An item without it is not in the index (the sweep still finds it). */
export const EXPIRY_SHARD_ATTRIBUTE = 'ttlstream_shard';
/** cosmos mode's sort key: last write + effective ttl in epoch seconds, kept by the write stamp. */
export const EXPIRY_DERIVED_ATTRIBUTE = 'ttlstream_expires';

export {
  DEFAULT_EXPIRY_SHARDS,
  ExpiryIndexSettingsSchema,
  MAX_EXPIRY_SHARDS,
  type ExpiryIndexSettings,
} from './expiry-index-settings';

/** The index's sort key: which attribute holds the expiry instant and its key type. */
export function expirySortKey(settings: TableTtlSettings): { attribute: string; type: 'N' | 'S' } {
  const policy = settings.policy;
  switch (policy.mode) {
    case 'dynamodb':
      return { attribute: policy.attributeName, type: 'N' };
    case 'cosmos':
      return { attribute: EXPIRY_DERIVED_ATTRIBUTE, type: 'N' };
    case 'mongo':
      return { attribute: policy.timeField, type: policy.timeFormat === 'iso-8601' ? 'S' : 'N' };
  }
}

/**
 * The sort-key range of items that may be expired at `nowMs`, or null when TTL is off. The index only
 * narrows the read: every item found is still judged by `evaluate`, and the conditional delete stays the authority.
 * - dynamodb: (now − 5 years, now] in exact decimal seconds; older values are ignored by the policy, so reading them
 *   would only cost.
 * - cosmos: the derived attribute ≤ now.
 * - mongo: the time field ≤ now − expireAfterSeconds, in the field's format. ISO-8601 strings compare as text: the
 *   cutoff is written `YYYY-MM-DDTHH:MM:SS.sssZ`, so UTC strings in that shape (with or without the fraction, which
 *   at most delays finding by a second) and calendar dates are found on time; a string with a positive offset is
 *   found up to that offset late, one with a negative offset early (read, judged not expired, kept until it is).
 */
export function expiryQueryRange(
  settings: TableTtlSettings,
  nowMs: number,
): { low?: AttributeValue; high: AttributeValue } | null {
  const policy = settings.policy;
  const now = Math.floor(nowMs);
  switch (policy.mode) {
    case 'dynamodb':
      return { low: { N: secondsText(now - FIVE_YEARS_MS) }, high: { N: secondsText(now) } };
    case 'cosmos':
      return policy.defaultTtl === null ? null : { high: { N: secondsText(now) } };
    case 'mongo': {
      if (policy.expireAfterSeconds === 'off') return null;
      const cutoff = now - policy.expireAfterSeconds * 1000;
      switch (policy.timeFormat) {
        case 'epoch-seconds':
          return { high: { N: secondsText(cutoff) } };
        case 'epoch-millis':
          return { high: { N: String(cutoff) } };
        case 'iso-8601':
          return { high: { S: isoCutoff(cutoff) } };
      }
    }
  }
}

/** ISO-8601 strings compare as text, so an offset of up to ±14 h can put an instant's text outside its range. */
const ISO_OFFSET_SLACK_MS = 14 * 3_600_000;

/**
 * The sort-key range (both ends inclusive) of items whose expiry may fall in `[fromMs, toMs]`, or null when TTL is
 * off: `ttlstream audit` reads the items of a window of expiries this way. Like `expiryQueryRange` it only narrows
 * the read (`evaluate` judges every item found); ISO-8601 ranges are widened by the largest zone offset, so a
 * string written with an offset is read rather than missed.
 */
export function expiryWindowRange(
  settings: TableTtlSettings,
  fromMs: number,
  toMs: number,
): { low: AttributeValue; high: AttributeValue } | null {
  const policy = settings.policy;
  const from = Math.floor(fromMs);
  const to = Math.ceil(toMs);
  switch (policy.mode) {
    case 'dynamodb':
      return { low: { N: secondsText(from) }, high: { N: secondsText(to) } };
    case 'cosmos':
      return policy.defaultTtl === null
        ? null
        : { low: { N: secondsText(from) }, high: { N: secondsText(to) } };
    case 'mongo': {
      if (policy.expireAfterSeconds === 'off') return null;
      const shift = policy.expireAfterSeconds * 1000;
      switch (policy.timeFormat) {
        case 'epoch-seconds':
          return { low: { N: secondsText(from - shift) }, high: { N: secondsText(to - shift) } };
        case 'epoch-millis':
          return { low: { N: String(from - shift) }, high: { N: String(to - shift) } };
        case 'iso-8601':
          return {
            low: { S: isoCutoff(from - shift - ISO_OFFSET_SLACK_MS) },
            high: { S: isoCutoff(to - shift + ISO_OFFSET_SLACK_MS) },
          };
      }
    }
  }
}

/** Exact decimal seconds of an integer ms instant (`1735689600.123`). */
export function secondsText(ms: number): string {
  const negative = ms < 0;
  const abs = Math.abs(ms);
  const seconds = Math.floor(abs / 1000);
  const fraction = abs - seconds * 1000;
  const text =
    fraction === 0 ? String(seconds) : `${seconds}.${String(fraction).padStart(3, '0').replace(/0+$/, '')}`;
  return negative ? `-${text}` : text;
}

function isoCutoff(ms: number): string {
  // Dates outside JavaScript's range cannot be cut at: the lowest or highest string keeps the query valid.
  if (ms < -8.64e15) return '';
  if (ms > 8.64e15) return '\uffff';
  return new Date(ms).toISOString();
}

/**
 * The shard of an item: sha256 over its key attributes (sorted by name, type-tagged, numbers in their one spelling)
 * mod `shards`, so one item stays in one shard across rewrites, whether a writer spells a number key `1e3` or the
 * backfill reads it back as `1000`, and the shards fill evenly.
 */
/** A number's one spelling; text that is no DynamoDB number (the server refuses the write) is hashed as it is. */
function numberSpelling(n: string): string {
  return NUMBER_PATTERN.test(n) ? canonicalNumber(n) : n;
}

export function expiryShardOf(key: Item, shards: number): number {
  const names = Object.keys(key).sort();
  const hash = createHash('sha256');
  for (const name of names) {
    const value = key[name] as AttributeValue;
    hash.update(JSON.stringify(name));
    if (value.S !== undefined) hash.update(`S${JSON.stringify(value.S)}`);
    else if (value.N !== undefined) hash.update(`N${JSON.stringify(numberSpelling(value.N))}`);
    else if (value.B !== undefined) hash.update(`B${Buffer.from(value.B).toString('base64')}`);
    else hash.update(`?${JSON.stringify(value)}`);
  }
  return hash.digest().readUInt32BE(0) % shards;
}

/**
 * cosmos mode: the instant an item written at `lastWriteMs` with item ttl `itemTtl` (undefined: absent) expires, in
 * ms, or undefined when it never does or the ttl is not one the policy honours (then it stays out of the index;
 * `evaluate` would keep it anyway).
 */
export function cosmosExpiryMs(
  defaultTtl: number | null,
  itemTtl: AttributeValue | undefined,
  lastWriteMs: number,
): number | undefined {
  if (defaultTtl === null) return undefined;
  let seconds: number;
  if (itemTtl === undefined) {
    if (defaultTtl === -1) return undefined;
    seconds = defaultTtl;
  } else {
    const text = numberTextOf(itemTtl);
    const decimal = text === undefined ? undefined : parseDecimal(text);
    if (!decimal) return undefined;
    seconds = decimalToNumber(decimal);
    if (!(Number.isInteger(seconds) && seconds >= 1 && seconds <= COSMOS_MAX_TTL_SECONDS)) return undefined;
  }
  return lastWriteMs + seconds * 1000;
}

/**
 * Attributes a GSI must project besides its keys so the scanner can judge an item from the index alone: what
 * `relevantAttributes` names, minus the index's own sort key.
 */
export function expiryIndexProjection(relevant: readonly string[], settings: TableTtlSettings): string[] {
  const sort = expirySortKey(settings).attribute;
  return relevant.filter((a) => a !== sort);
}

/**
 * The GSI as the DynamoDB API defines it, for UpdateTable's `GlobalSecondaryIndexUpdates: [{ Create }]` (and for a
 * CreateTable that starts with it): keys shard + sort key, projecting the table keys (always) and what the policy
 * reads besides the sort key, so a Query of the index alone gives `evaluate` every input. On-demand tables take no
 * ProvisionedThroughput; a provisioned table's caller adds it.
 */
export function expiryIndexDefinition(
  settings: TableTtlSettings,
  relevant: readonly string[],
): {
  attributeDefinitions: Array<{ AttributeName: string; AttributeType: 'N' | 'S' }>;
  index: {
    IndexName: string;
    KeySchema: Array<{ AttributeName: string; KeyType: 'HASH' | 'RANGE' }>;
    Projection: { ProjectionType: 'KEYS_ONLY' } | { ProjectionType: 'INCLUDE'; NonKeyAttributes: string[] };
  };
} {
  const sort = expirySortKey(settings);
  const include = expiryIndexProjection(relevant, settings);
  return {
    attributeDefinitions: [
      { AttributeName: EXPIRY_SHARD_ATTRIBUTE, AttributeType: 'N' },
      { AttributeName: sort.attribute, AttributeType: sort.type },
    ],
    index: {
      IndexName: EXPIRY_INDEX_NAME,
      KeySchema: [
        { AttributeName: EXPIRY_SHARD_ATTRIBUTE, KeyType: 'HASH' },
        { AttributeName: sort.attribute, KeyType: 'RANGE' },
      ],
      Projection:
        include.length === 0
          ? { ProjectionType: 'KEYS_ONLY' }
          : { ProjectionType: 'INCLUDE', NonKeyAttributes: include },
    },
  };
}
