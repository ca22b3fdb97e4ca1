import { hash } from 'node:crypto';
import type { AttributeMap, AttributeValue } from './attribute-value';
import { NUMBER_PATTERN } from './attribute-value';
import { DataError, ValidationError } from '../core/errors';

/**
 * JSON with object keys sorted (UTF-16 code unit order, as RFC 8785), so equal values give equal
 * strings whatever the property order. Binaries (Uint8Array, Buffer) become base64 strings, as in
 * DynamoDB JSON. Undefined properties are omitted and undefined array slots become null (as
 * JSON.stringify); values JSON cannot represent faithfully (NaN, Infinity, bigint, functions,
 * symbols) throw instead of being silently changed, because these strings feed ids and keys.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new DataError(`canonicalJson: ${value} has no JSON form`);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new DataError(`canonicalJson: a ${typeof value} has no JSON form`);
  }
  if (value instanceof Uint8Array)
    return JSON.stringify(Buffer.from(value.buffer, value.byteOffset, value.length).toString('base64'));
  if (seen.has(value)) throw new DataError('canonicalJson: circular structure');
  seen.add(value);
  try {
    if (Array.isArray(value))
      return `[${value.map((v) => (v === undefined ? 'null' : write(v, seen))).join(',')}]`;
    const withToJson = value as { toJSON?: () => unknown };
    if (typeof withToJson.toJSON === 'function') return write(withToJson.toJSON(), seen);
    const obj = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(obj).sort()) {
      const v = obj[key];
      if (v === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${write(v, seen)}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    seen.delete(value);
  }
}

/** An integer without a sign but `-`, a leading zero or a fraction: canonicalNumber gives it back as it is. */
const CANONICAL_INTEGER = /^(?:0|-?[1-9]\d*)$/;

/**
 * One spelling per number: "1", "1.0", "+1" and "10e-1" are the same DynamoDB number and give
 * "1"; "-0" gives "0". Plain decimal notation, except for exponents beyond ±1000 (DynamoDB allows
 * only 1e-130..1e126, so those never come from a table) which keep a normalised exponent form.
 */
export function canonicalNumber(n: string): string {
  // Most numbers are integers spelled as DynamoDB returns them: already their one spelling.
  if (CANONICAL_INTEGER.test(n)) return n;
  if (!NUMBER_PATTERN.test(n)) throw new DataError(`not a DynamoDB number: ${JSON.stringify(n)}`);
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(n);
  if (!m) throw new DataError(`not a DynamoDB number: ${JSON.stringify(n)}`);
  const negative = m[1] === '-';
  const intPart = m[2] ?? '';
  const fracPart = m[3] ?? '';
  let exponent = Number(m[4] ?? '0') - fracPart.length;
  let digits = (intPart + fracPart).replace(/^0+/, '');
  if (digits === '') return '0';
  const trailing = /0+$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  const sign = negative ? '-' : '';
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) return `${sign}${digits}e${exponent}`;
  if (exponent >= 0) return sign + digits + '0'.repeat(exponent);
  const point = digits.length + exponent;
  if (point > 0) return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
  return `${sign}0.${'0'.repeat(-point)}${digits}`;
}

function canonicalKeyValue(value: AttributeValue): unknown {
  if (value.N !== undefined) return { N: canonicalNumber(value.N) };
  return value;
}

/** DynamoDB table names: 3 to 255 of A-Z a-z 0-9 _ - . */
export const TABLE_NAME_PATTERN = /^[A-Za-z0-9_.-]{3,255}$/;

/**
 * The Kafka message key of an item's records: `<table>/<canonical JSON of the key>`, e.g.
 * `orders/{"pk":{"S":"a"},"sk":{"N":"1"}}`. Attribute order and number spelling do not change it,
 * so every record of one item hashes to one partition. Table names cannot contain "/", so the
 * split is unambiguous.
 */
export function messageKey(table: string, keys: AttributeMap): string {
  if (!TABLE_NAME_PATTERN.test(table)) throw new DataError(`invalid table name: ${JSON.stringify(table)}`);
  const names = Object.keys(keys);
  if (names.length === 0) throw new DataError('messageKey: a key has at least one attribute');
  const canonical = Object.fromEntries(
    names.map((name) => [name, canonicalKeyValue(keys[name] as AttributeValue)]),
  );
  return `${table}/${canonicalJson(canonical)}`;
}

/**
 * The digest that stands for an item's key where the key itself must not appear: the erasure ledger and
 * `audit --hash-keys`. SHA-256 (64 hex) of the item's Kafka message key, so it is stable across attribute
 * order and number spelling, and names the table. Unsalted: a guessable key (an e-mail) can be found by trying
 * candidates, which docs/compliance.md says.
 */
export function keyDigest(table: string, keys: AttributeMap): string {
  return messageKeyDigest(messageKey(table, keys));
}

/** keyDigest of a Kafka message key as it arrives (its UTF-8 bytes), without decoding the message. */
export function messageKeyDigest(key: string | Buffer): string {
  return hash('sha256', key, 'hex');
}

/**
 * A deterministic eventID: 32 hex characters (the length of DynamoDB Streams eventIDs) of the
 * SHA-256 of the canonical JSON of `parts`. Pass everything that identifies one deletion (table,
 * canonical key, and what distinguishes this deletion from an earlier one of the same key), so a
 * retried publish of the same deletion repeats its id and a new deletion gets a new one.
 */
export function deriveEventId(parts: unknown): string {
  return hash('sha256', canonicalJson(parts), 'hex').slice(0, 32);
}

/** SequenceNumbers are decimal strings of at least 21 digits, zero-padded (as DynamoDB Streams). */
export function formatSequenceNumber(n: bigint | number): string {
  const big = typeof n === 'bigint' ? n : BigInt(n);
  if (big < 0n) throw new ValidationError('SequenceNumber must not be negative');
  return big.toString().padStart(21, '0');
}
