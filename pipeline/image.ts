import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { hash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Item } from '../policy/types';
import { DataError } from '../core/errors';
import type { JsonAttributeValue } from '../schemas/json-shape';
import { canonicalNumber } from '../schemas/canonical';

/**
 * Canonical forms of DynamoDB items for hashing and for the intent rows. Binary becomes base64 and set members
 * are sorted, because the server may return a set in any order and the same item must always hash the same:
 * eventIDs are derived from these hashes (docs/decisions/0001-deletion-protocol.md).
 */

export type JsonItem = Record<string, JsonAttributeValue>;

/** The attributes of `item` named in `names` that it has (an item's key, a cursor), in the order named. */
export function pick(item: Item, names: readonly string[]): Item {
  const out: Item = {};
  for (const n of names) {
    const v = item[n];
    if (v !== undefined) out[n] = v;
  }
  return out;
}

const b64 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('base64');

export function toJsonValue(v: AttributeValue): JsonAttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.B !== undefined) return { B: b64(v.B) };
  if (v.SS !== undefined) return { SS: [...v.SS].sort() };
  if (v.NS !== undefined) return { NS: [...v.NS].sort() };
  if (v.BS !== undefined) return { BS: v.BS.map(b64).sort() };
  if (v.M !== undefined) return { M: toJsonItem(v.M) };
  if (v.L !== undefined) return { L: v.L.map(toJsonValue) };
  if (v.NULL !== undefined) return { NULL: true };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  throw new DataError(`unsupported attribute value: ${JSON.stringify(Object.keys(v))}`);
}

// Object.fromEntries, not assignment: DynamoDB allows an attribute named `__proto__`, which `out[k] = v` would lose.
export function toJsonItem(item: Item): JsonItem {
  return Object.fromEntries(Object.entries(item).map(([k, v]) => [k, toJsonValue(v)]));
}

export function fromJsonValue(v: JsonAttributeValue): AttributeValue {
  if ('S' in v) return { S: v.S };
  if ('N' in v) return { N: v.N };
  if ('B' in v) return { B: new Uint8Array(Buffer.from(v.B, 'base64')) };
  if ('SS' in v) return { SS: v.SS };
  if ('NS' in v) return { NS: v.NS };
  if ('BS' in v) return { BS: v.BS.map((s) => new Uint8Array(Buffer.from(s, 'base64'))) };
  if ('M' in v) return { M: fromJsonItem(v.M) };
  if ('L' in v) return { L: v.L.map(fromJsonValue) };
  if ('NULL' in v) return { NULL: true };
  return { BOOL: v.BOOL };
}

export function fromJsonItem(item: JsonItem): Item {
  return Object.fromEntries(Object.entries(item).map(([k, v]) => [k, fromJsonValue(v)]));
}

/** JSON with object keys sorted at every level: equal values give equal strings. */
export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
}

export function canonicalItem(item: Item): string {
  return stableJson(toJsonItem(item));
}

/**
 * The identity of an item's key: canonicalItem with every number in its one spelling (canonicalNumber), so a key
 * read as `1e3` from one answer and as `1E+3` or `1000` from another is one key. DynamoDB compares numbers by
 * value and returns them normalised, but a server may keep them as written and re-spell them in some answers
 * (moto does under a ProjectionExpression). For hashing, matching and IDs only (mark rows and shards, eventIDs,
 * an answer's items matched to what was asked): a request that names the item sends the key attributes as the
 * server returned them (docs/decisions/0040). The same string as canonicalItem for a key whose numbers are
 * already in that spelling, which is every key DynamoDB returns.
 */
export function keyIdentity(keys: Item): string {
  return stableJson(
    Object.fromEntries(
      Object.entries(keys).map(([k, v]) => [
        k,
        v.N !== undefined ? { N: canonicalNumber(v.N) } : toJsonValue(v),
      ]),
    ),
  );
}

function sha256(s: string): string {
  return hash('sha256', s, 'hex');
}

/** Hash of an image; equal iff the items are equal (attribute order and set order do not matter). */
export function imageHash(item: Item): string {
  return hashOfCanonical(canonicalItem(item));
}

/** imageHash from the image's canonicalItem, for a caller that already has it. */
export function hashOfCanonical(canonical: string): string {
  return sha256(canonical);
}

/**
 * What makes one deletion decision of an item distinct from every other decision about the same item, so that its
 * eventID is unique per decision (docs/decisions/0009-event-id-per-decision.md):
 * - `mark`: a first decision, taken on a scanner's mark; `row` is the sk of the mark row it was read from, unique
 *   per scanner write. Two producers that briefly act on the same mark (a lease overlap) read the same row, so
 *   they derive the same eventID and consumers' de-duplication makes their records one.
 * - `after`: a decision that follows an earlier one of the same item known to the journal (a retracted deletion,
 *   a key re-created after a witnessed deletion); `eventID` is that earlier decision's.
 * - `corrects`: the corrected record of a deletion whose deleted image differed from the published one.
 */
export type DecisionBasis =
  { kind: 'mark'; row: string } | { kind: 'after'; eventID: string } | { kind: 'corrects'; eventID: string };

/** Domain tag of the eventIDs derived per decision; earlier releases hashed `[table, keys, image]` alone. */
const EVENT_ID_SCHEME = 'ttlstream.eventID.v2';

/**
 * The eventID of one deletion decision: the first 32 hex characters of sha256 over the scheme tag, the table, the
 * key, the image and the decision's basis. It is journaled with the intent, so a retry or a crash recovery of the
 * same decision republishes the same eventID; a later decision about the same item, even with a byte-identical
 * image, has another basis and so another eventID. `imageCanonical` (canonicalItem(image)), when the caller has
 * it, saves canonicalising the image again.
 */
export function eventIdFor(
  table: string,
  keys: Item,
  image: Item,
  basis: DecisionBasis,
  imageCanonical?: string,
): string {
  const by = basis.kind === 'mark' ? basis.row : basis.eventID;
  const canonical = `[${JSON.stringify(EVENT_ID_SCHEME)},${JSON.stringify(table)},${keyIdentity(keys)},${
    imageCanonical ?? canonicalItem(image)
  },${JSON.stringify(basis.kind)},${JSON.stringify(by)}]`;
  return sha256(canonical).slice(0, 32);
}

/**
 * Byte size of Keys + OldImage as DynamoDB JSON (the record's SizeBytes). The canonical JSON has the same bytes in
 * another order (keys and set members sorted), so a caller holding canonicalItem(image) passes it.
 */
export function sizeBytes(keys: Item, image: Item, imageCanonical?: string): number {
  return Buffer.byteLength(canonicalItem(keys)) + Buffer.byteLength(imageCanonical ?? canonicalItem(image));
}

/** Intent rows carry the image as JSON text, gzipped above this size to stay far from the 400 KB item limit. */
export const GZIP_ABOVE_BYTES = 8 * 1024;
/**
 * An image that is still larger gzipped (incompressible binary near DynamoDB's 400 KB item limit) is left out of
 * the intent row: the row must fit, and the protocol needs only the image's hash, which is always there.
 */
export const MAX_PACKED_IMAGE_BYTES = 300 * 1024;

export function packImage(
  image: Item,
): { imageJson: AttributeValue } | { imageGz: AttributeValue } | { imageOmitted: AttributeValue } {
  const json = JSON.stringify(toJsonItem(image));
  if (Buffer.byteLength(json) <= GZIP_ABOVE_BYTES) return { imageJson: { S: json } };
  const gz = gzipSync(json);
  if (gz.length > MAX_PACKED_IMAGE_BYTES) return { imageOmitted: { BOOL: true } };
  return { imageGz: { B: new Uint8Array(gz) } };
}

export function unpackImage(row: Record<string, AttributeValue>): Item | undefined {
  const s = row.imageJson?.S ?? (row.imageGz?.B ? gunzipSync(row.imageGz.B).toString('utf8') : undefined);
  return s === undefined ? undefined : fromJsonItem(JSON.parse(s) as JsonItem);
}

/**
 * SequenceNumbers: 21-digit decimal strings from the decision time (ms × 10^6, i.e. a million slots per ms, plus a
 * counter when a slot is already used),
 * strictly increasing within a process. One key's deletions are decided one after another, so they increase per
 * key across processes too as long as clocks agree to within the time between two deletions of the same key.
 */
export class SequenceGenerator {
  private last = 0n;
  next(nowMs: number): string {
    const base = BigInt(Math.floor(nowMs)) * 1_000_000n;
    this.last = base > this.last ? base : this.last + 1n;
    return this.last.toString().padStart(21, '0');
  }
}
