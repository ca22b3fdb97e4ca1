import type { MongoTtl, TimeFormat } from '../settings';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Evaluation, Item } from '../types';
import { numberTextOf, stringOf } from '../attribute-value';
import { LOOKS_LIKE_MILLIS_SECONDS } from '../constants';
import { decimalToNumber, parseDecimal } from '../decimal';
import { parseIso8601 } from '../iso-8601';
import { expiresAt } from './verdicts';

/**
 * MongoDB TTL (seed 003): the item expires `expireAfterSeconds` after its time field. Like MongoDB,
 * an item whose time field is missing or not a date is simply not subject to TTL.
 */
export function evaluateMongo(policy: MongoTtl, item: Item, nowMs: number): Evaluation {
  if (policy.expireAfterSeconds === 'off') return { kind: 'not-subject', reason: 'ttl-off' };
  const value = item[policy.timeField];
  const time = value === undefined ? undefined : timeOf(value, policy.timeFormat);
  if (time === undefined) return { kind: 'not-subject', reason: 'no-attribute' };
  const expiresAtMs = time.ms + policy.expireAfterSeconds * 1000;
  if (!Number.isFinite(expiresAtMs)) return { kind: 'not-subject', reason: 'no-attribute' };
  return expiresAt(expiresAtMs, nowMs, time.looksLikeMillis);
}

function timeOf(
  value: AttributeValue,
  format: TimeFormat,
): { ms: number; looksLikeMillis: boolean } | undefined {
  if (format === 'iso-8601') {
    const text = stringOf(value);
    const ms = text === undefined ? undefined : parseIso8601(text);
    return ms === undefined ? undefined : { ms, looksLikeMillis: false };
  }
  const text = numberTextOf(value);
  const decimal = text === undefined ? undefined : parseDecimal(text);
  if (!decimal) return undefined;
  const ms = decimalToNumber(decimal, format === 'epoch-seconds' ? 3 : 0);
  if (!Number.isFinite(ms)) return undefined;
  const looksLikeMillis = format === 'epoch-seconds' && decimalToNumber(decimal) >= LOOKS_LIKE_MILLIS_SECONDS;
  return { ms, looksLikeMillis };
}
