import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** An item in DynamoDB JSON, as the SDK returns it. */
export type Item = Record<string, AttributeValue>;

/** Why a TTL value was ignored: the item is never deleted for it (DynamoDB FAQ Q9, Q19). */
export type IgnoredReason =
  | 'wrong-type' // not a Number (S, B, sets, lists, maps, NULL, BOOL)
  | 'malformed' // a Number that does not parse to a finite value, or a value the mode does not allow
  | 'older-than-5-years' // dynamodb mode: epoch more than 5 years in the past
  | 'item-ttl-null'; // cosmos mode: item-level ttl NULL is not allowed

/**
 * The verdict of the policy engine for one item at one instant.
 * - not-subject: TTL does not apply (TTL off, attribute absent, time field absent).
 * - ignored: a TTL value is present but invalid; never deleted for it.
 * - never: TTL applies but this item never expires (cosmos ttl -1, or default -1 and no item ttl).
 * - held: legal hold keeps the item; `expiresAtMs` says when it would have expired.
 * - expires: the item expires at `expiresAtMs`; `expired` when that is at or before now.
 */
export type Evaluation =
  | { kind: 'not-subject'; reason: 'ttl-off' | 'no-attribute' }
  | { kind: 'ignored'; reason: IgnoredReason }
  | { kind: 'never' }
  | { kind: 'held'; expiresAtMs?: number }
  | { kind: 'expires'; expiresAtMs: number; expired: boolean; looksLikeMillis: boolean };

/** A DynamoDB condition, ready for a DeleteItem, ScanCommand filter or TransactWriteItems. */
export interface ConditionParts {
  expression: string;
  names: Record<string, string>;
  values: Record<string, AttributeValue>;
}
