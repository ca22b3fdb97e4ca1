import { FIVE_YEARS_MS } from './constants';
import { millisToSecondsText } from './decimal';
import { assertInstant, evaluate, isExpired } from './evaluate';
import type { TableTtlSettings } from './settings';
import type { ConditionParts, Item } from './types';

/**
 * A FilterExpression for Query/Scan that hides items expired but not yet deleted (DynamoDB FAQ Q21),
 * dynamodb mode only. It keeps exactly what `filterUnexpired` keeps: an item is hidden only when its
 * TTL attribute is a Number at or before now and not more than 5 years in the past, and it is not
 * held. "now" is sent as exact decimal seconds, so the server agrees with `evaluate` to the
 * millisecond (for an integer `nowMs`).
 *
 * Returns null for cosmos and mongo modes: their expiry is a sum of two attributes (or parses a date
 * string), which a FilterExpression cannot compute; use `filterUnexpired` on the results instead.
 */
export function notExpiredFilter(settings: TableTtlSettings, nowMs: number): ConditionParts | null {
  assertInstant(nowMs, 'nowMs');
  const policy = settings.policy;
  if (policy.mode !== 'dynamodb') return null;
  const clauses = [
    'attribute_not_exists(#ttl)',
    'NOT attribute_type(#ttl, :numberType)',
    '#ttl > :now',
    '#ttl < :oldestHonoured',
  ];
  const names: Record<string, string> = { '#ttl': policy.attributeName };
  const values: ConditionParts['values'] = {
    ':numberType': { S: 'N' },
    ':now': { N: millisToSecondsText(nowMs) },
    ':oldestHonoured': { N: millisToSecondsText(nowMs - FIVE_YEARS_MS) },
  };
  if (settings.legalHoldAttribute !== undefined) {
    clauses.push('#hold = :holdTrue');
    names['#hold'] = settings.legalHoldAttribute;
    values[':holdTrue'] = { BOOL: true };
  }
  return { expression: clauses.join(' OR '), names, values };
}

/** The items that are not expired at `nowMs`, in their order; works in every mode. */
export function filterUnexpired<T extends Item>(settings: TableTtlSettings, items: T[], nowMs: number): T[] {
  assertInstant(nowMs, 'nowMs'); // also for an empty list, so a bad clock is found at once
  return items.filter((item) => !isExpired(evaluate(settings, item, nowMs)));
}
