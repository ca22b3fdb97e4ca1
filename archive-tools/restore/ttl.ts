import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../../core/errors';
import {
  evaluate,
  isExpired,
  type Item,
  type TableTtlSettings,
  type TimeFormat,
  type TtlPolicy,
} from '../../policy';

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
    // The policy engine's own verdict, so the warning means exactly "the scanner will delete it".
    const verdict = evaluate({ policy }, out, nowMs);
    return isExpired(verdict) && verdict.kind === 'expires'
      ? {
          item: out,
          warning: `TTL kept: the item expired at ${new Date(verdict.expiresAtMs).toISOString()} and will be deleted again`,
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
