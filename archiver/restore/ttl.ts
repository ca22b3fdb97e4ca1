import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../../core/errors';
import type { Item } from '../../policy/types';
import type { TableTtlSettings, TimeFormat, TtlPolicy } from '../../policy/settings';

/**
 * What a restore does with an item's TTL inputs. The seeds warn that data restored past its TTL is
 * deleted again at once, so the default is `remove`: the restored item does not expire.
 * - `remove`: dynamodb drops the TTL attribute; cosmos sets the item's ttl to -1 (dropping it would
 *   fall back to the container default); mongo drops the time field (MongoDB ignores documents
 *   without it; the original value stays in the archive).
 * - `keep`: the item exactly as it was deleted; it expires again at once when its TTL is past.
 * - `{ extendSeconds: n }`: the item expires n seconds from now.
 */
export type RestoreTtlMode = 'keep' | 'remove' | { extendSeconds: number };

export interface TtlTransformResult {
  item: Item;
  /** Set when the written item will expire again at once (or at the given instant). */
  warning?: string;
}

/**
 * The TTL policy that governs the written item: the table's settings when known, else DynamoDB
 * semantics on `fallbackAttribute`. Null when nothing is known and nothing is needed (`keep`).
 */
export function effectivePolicy(
  settings: TableTtlSettings | undefined,
  fallbackAttribute: string | undefined,
  mode: RestoreTtlMode,
): TtlPolicy | null {
  if (settings) return settings.policy;
  if (fallbackAttribute) return { mode: 'dynamodb', attributeName: fallbackAttribute };
  if (mode === 'keep') return null;
  throw new ValidationError(
    'the table has no TTL settings: pass the TTL attribute name (ttlAttribute) or use ttl mode "keep"',
  );
}

/** Apply `mode` to a copy of `item`. Pure: `nowMs` is the only clock. */
export function applyRestoreTtl(
  item: Item,
  policy: TtlPolicy | null,
  mode: RestoreTtlMode,
  nowMs: number,
): TtlTransformResult {
  const out: Item = { ...item };
  if (policy === null) return { item: out };
  if (mode === 'keep') {
    const expiresAtMs = expiryOf(out, policy);
    return expiresAtMs !== undefined && expiresAtMs <= nowMs
      ? {
          item: out,
          warning: `TTL kept: the item expired at ${new Date(expiresAtMs).toISOString()} and will be deleted again`,
        }
      : { item: out };
  }
  const nowSeconds = Math.floor(nowMs / 1000);
  switch (policy.mode) {
    case 'dynamodb':
      if (mode === 'remove') delete out[policy.attributeName];
      else out[policy.attributeName] = { N: String(nowSeconds + mode.extendSeconds) };
      return { item: out };
    case 'cosmos':
      if (mode === 'remove') {
        out[policy.ttlAttribute] = { N: '-1' };
      } else {
        // Cosmos TTL counts from the last write, so the restore is that write.
        out[policy.ttlAttribute] = { N: String(mode.extendSeconds) };
        out[policy.lastWriteAttribute] = { N: String(nowSeconds) };
      }
      return { item: out };
    case 'mongo': {
      if (mode === 'remove') {
        delete out[policy.timeField];
        return { item: out };
      }
      // With expireAfterSeconds "off" nothing expires; the field is still set so that the item
      // expires n seconds from now (as if the threshold were 0) should TTL be turned on.
      const after = policy.expireAfterSeconds === 'off' ? 0 : policy.expireAfterSeconds;
      out[policy.timeField] = formatTime((nowSeconds + mode.extendSeconds - after) * 1000, policy.timeFormat);
      return { item: out };
    }
  }
}

export function formatTime(ms: number, format: TimeFormat): AttributeValue {
  switch (format) {
    case 'epoch-seconds':
      return { N: String(Math.floor(ms / 1000)) };
    case 'epoch-millis':
      return { N: String(Math.floor(ms)) };
    case 'iso-8601':
      return { S: new Date(ms).toISOString() };
  }
}

function numberOf(value: AttributeValue | undefined): number | undefined {
  if (value === undefined || !('N' in value) || value.N === undefined) return undefined;
  const n = Number(value.N);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * When the item, written as it is, would expire: only to warn in `keep` mode, so a rough reading
 * is enough (the policy engine decides deletions, never this).
 */
function expiryOf(item: Item, policy: TtlPolicy): number | undefined {
  switch (policy.mode) {
    case 'dynamodb': {
      const s = numberOf(item[policy.attributeName]);
      return s === undefined ? undefined : s * 1000;
    }
    case 'cosmos': {
      if (policy.defaultTtl === null) return undefined;
      const ts = numberOf(item[policy.lastWriteAttribute]);
      const ttl = numberOf(item[policy.ttlAttribute]) ?? policy.defaultTtl;
      if (ts === undefined || ttl === -1) return undefined;
      return (ts + ttl) * 1000;
    }
    case 'mongo': {
      if (policy.expireAfterSeconds === 'off') return undefined;
      const v = item[policy.timeField];
      let ms: number | undefined;
      if (v && 'S' in v && v.S !== undefined) {
        const parsed = Date.parse(v.S);
        ms = Number.isFinite(parsed) ? parsed : undefined;
      } else {
        const n = numberOf(v);
        ms = n === undefined ? undefined : policy.timeFormat === 'epoch-millis' ? n : n * 1000;
      }
      return ms === undefined ? undefined : ms + policy.expireAfterSeconds * 1000;
    }
  }
}
