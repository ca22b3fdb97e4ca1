import type { DynamoTtl } from '../settings';
import type { Evaluation, Item } from '../types';
import { numberTextOf } from '../attribute-value';
import { FIVE_YEARS_MS, LOOKS_LIKE_MILLIS_SECONDS } from '../constants';
import { decimalToNumber, parseDecimal } from '../decimal';
import { expiresAt } from './verdicts';

/**
 * DynamoDB TTL: a top-level Number holding the expiry in epoch seconds (FAQ Q4, Q9, Q16, Q19).
 * The exact decimal value counts, so 1.5 expires at 1500 ms.
 */
export function evaluateDynamo(policy: DynamoTtl, item: Item, nowMs: number): Evaluation {
  const value = item[policy.attributeName];
  if (value === undefined) return { kind: 'not-subject', reason: 'no-attribute' };
  const text = numberTextOf(value);
  if (text === undefined) return { kind: 'ignored', reason: 'wrong-type' };
  // The common case, whole seconds of up to 12 digits: exact as a double, and ×1000 stays below 2^53, so the exact
  // decimal path (BigInt exponents, once per item scanned) would give the same numbers.
  if (typeof text === 'string' && PLAIN_SECONDS.test(text)) {
    const seconds = Number(text);
    return verdict(seconds * 1000, seconds, nowMs);
  }
  const decimal = parseDecimal(text);
  if (!decimal) return { kind: 'ignored', reason: 'malformed' };
  const expiresAtMs = decimalToNumber(decimal, 3);
  // Finite seconds whose milliseconds overflow a double are far beyond DynamoDB's own Number range.
  if (!Number.isFinite(expiresAtMs)) return { kind: 'ignored', reason: 'malformed' };
  return verdict(expiresAtMs, decimalToNumber(decimal), nowMs);
}

const PLAIN_SECONDS = /^\d{1,12}$/;

function verdict(expiresAtMs: number, seconds: number, nowMs: number): Evaluation {
  // Strictly more than 5 years: a value exactly on the line still counts. Negative values (before
  // 1970) land here for any "now" after 1975.
  if (expiresAtMs < nowMs - FIVE_YEARS_MS) return { kind: 'ignored', reason: 'older-than-5-years' };
  return expiresAt(expiresAtMs, nowMs, seconds >= LOOKS_LIKE_MILLIS_SECONDS);
}
