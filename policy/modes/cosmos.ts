import type { CosmosTtl } from '../settings';
import type { Evaluation, Item } from '../types';
import { attributeTypeOf, numberTextOf } from '../attribute-value';
import { COSMOS_MAX_TTL_SECONDS, LOOKS_LIKE_MILLIS_SECONDS } from '../constants';
import { decimalToNumber, parseDecimal } from '../decimal';
import { expiresAt } from './verdicts';

/** How long after its last write an item lives, before its age is known. */
type Lifetime = { seconds: number } | { verdict: Evaluation };

const NEVER: Lifetime = { verdict: { kind: 'never' } };

/**
 * Cosmos DB TTL (seeds 000 and 001): a container default and a per-item `ttl`, both counted from the
 * item's last write. The item's value wins over the default, except that a null default turns TTL off
 * for every item.
 */
export function evaluateCosmos(policy: CosmosTtl, item: Item, nowMs: number): Evaluation {
  if (policy.defaultTtl === null) return { kind: 'not-subject', reason: 'ttl-off' };
  const lifetime = itemLifetime(policy, item);
  if ('verdict' in lifetime) return lifetime.verdict;

  const lastWriteSeconds = lastWriteOf(policy, item);
  // Without a trustworthy last-write time the age is unknown; deleting would be a guess, so TTL does
  // not apply. (Stamp writes with lastWriteStampMiddleware to give items their `_ts`.)
  if (lastWriteSeconds === undefined) return { kind: 'not-subject', reason: 'no-attribute' };
  const expiresAtMs = (lastWriteSeconds + lifetime.seconds) * 1000;
  if (!Number.isFinite(expiresAtMs)) return { kind: 'not-subject', reason: 'no-attribute' };
  return expiresAt(expiresAtMs, nowMs, lastWriteSeconds >= LOOKS_LIKE_MILLIS_SECONDS);
}

function itemLifetime(policy: CosmosTtl, item: Item): Lifetime {
  const value = item[policy.ttlAttribute];
  if (value === undefined) {
    // No item ttl: the default applies. -1 is "on, never expires"; 0 expires at once (seed 000).
    return policy.defaultTtl === -1 || policy.defaultTtl === null ? NEVER : { seconds: policy.defaultTtl };
  }
  // Seed 000: "In item level you CANNOT set it to null"; a stored NULL is an invalid value, not "inherit".
  if (attributeTypeOf(value) === 'NULL') return { verdict: { kind: 'ignored', reason: 'item-ttl-null' } };
  const text = numberTextOf(value);
  if (text === undefined) return { verdict: { kind: 'ignored', reason: 'wrong-type' } };
  const decimal = parseDecimal(text);
  const seconds = decimal ? decimalToNumber(decimal) : NaN;
  if (seconds === -1) return NEVER;
  // Seed 001: "a nonzero positive integer, '-1', or null"; the maximum is 2147483647.
  if (Number.isInteger(seconds) && seconds >= 1 && seconds <= COSMOS_MAX_TTL_SECONDS) return { seconds };
  return { verdict: { kind: 'ignored', reason: 'malformed' } };
}

function lastWriteOf(policy: CosmosTtl, item: Item): number | undefined {
  const value = item[policy.lastWriteAttribute];
  const text = value === undefined ? undefined : numberTextOf(value);
  const decimal = text === undefined ? undefined : parseDecimal(text);
  if (!decimal) return undefined;
  const seconds = decimalToNumber(decimal);
  // A last write before 1970 cannot come from a stamp; treat it as unknown rather than as very old.
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}
