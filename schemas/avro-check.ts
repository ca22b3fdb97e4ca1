import { schemaRegistry } from './avro-registry';
import type { AvroAttributeValue, AvroRetraction } from './avro-shape';
import { ATTRIBUTE_TYPES, MAX_NESTING, NUMBER_PATTERN, type AttributeType } from './attribute-value';
import { TABLE_NAME_PATTERN } from './canonical';
import { HEADERS, type MessageHeaders, type RecordKind } from './headers';
import { WALKED_STREAM_RECORD_FINGERPRINT, ascii, walkRemove, type KeyValue } from './avro-walk';

/**
 * A fast sufficient check for the common message: Avro of the current writer schema. It decodes
 * once and checks the contract on the Avro value itself, without converting it to the SDK shape
 * and running the zod schemas. It only ever says "valid" or "cannot vouch": a message it does not
 * accept (anything unusual, invalid or not) must go through decodeMessage, which decides and
 * gives the exact error. So it can only be stricter than decodeMessage, never laxer; the unit
 * tests check that every message it accepts, decodeMessage accepts with the same content.
 */

/** What the archive needs of an accepted message. */
export interface CheckedAvroMessage {
  kind: RecordKind;
  table: string;
  /** The REMOVE's eventID, or for a retraction the eventID it retracts. */
  eventID: string;
  /** Key attributes, SDK shape (each S, N or B). */
  keys: Record<string, KeyValue>;
  /** REMOVE: ApproximateCreationDateTime (s) × 1000; retraction: retractedAt (ms). */
  deletedAtMs: number;
  /** REMOVE only; '' for a retraction. */
  sequenceNumber: string;
  /** The writer schema fingerprint (the current one of the kind). */
  fingerprint: string;
}

/** A header that is exactly one string or Buffer, as it came; absent → undefined; repeated → null. */
function simpleHeader(headers: MessageHeaders, name: string): string | Buffer | undefined | null {
  const raw = headers[name];
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'string' || Buffer.isBuffer(raw)) return raw;
  return null; // arrays: let decodeMessage judge
}

/**
 * A header simpleHeader returned says `value` (absent says nothing against it). A Buffer of ASCII bytes is
 * compared with the string code unit by code unit without decoding it (only those bytes decode to an ASCII
 * string); any other byte decodes first, as the full path reads it.
 */
function headerAgrees(header: string | Buffer | undefined, value: string): boolean {
  if (header === undefined) return true;
  if (typeof header === 'string') return header === value;
  for (let i = 0; i < header.length; i++) {
    const b = header[i] as number;
    if (b >= 0x80) return header.toString('utf8') === value;
    if (i >= value.length || b !== value.charCodeAt(i)) return false;
  }
  return header.length === value.length;
}

/**
 * Whether the header is exactly the ASCII string `expected` (one string, or one Buffer of its
 * bytes), without decoding a Buffer: for an ASCII string only its own bytes decode to it.
 */
function headerIs(headers: MessageHeaders, name: string, expected: string, bytes: Buffer): boolean {
  const raw = headers[name];
  if (typeof raw === 'string') return raw === expected;
  if (!Buffer.isBuffer(raw) || raw.length !== bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (raw[i] !== bytes[i]) return false;
  return true;
}

const isNat = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** The single non-null tag of an Avro AttributeValue, or undefined when there is not exactly one. */
function tagOf(a: AvroAttributeValue): AttributeType | undefined {
  let found: AttributeType | undefined;
  for (const t of ATTRIBUTE_TYPES) {
    if (a[t] !== null && a[t] !== undefined) {
      if (found !== undefined) return undefined;
      found = t;
    }
  }
  return found;
}

function validValue(a: AvroAttributeValue, depth: number): boolean {
  switch (tagOf(a)) {
    case 'S':
      return typeof a.S === 'string';
    case 'N':
      return typeof a.N === 'string' && NUMBER_PATTERN.test(a.N);
    case 'B':
      return Buffer.isBuffer(a.B);
    case 'SS':
      return Array.isArray(a.SS) && a.SS.length > 0 && a.SS.every((s) => typeof s === 'string');
    case 'NS':
      return (
        Array.isArray(a.NS) &&
        a.NS.length > 0 &&
        a.NS.every((s) => typeof s === 'string' && NUMBER_PATTERN.test(s))
      );
    case 'BS':
      return Array.isArray(a.BS) && a.BS.length > 0 && a.BS.every((b) => Buffer.isBuffer(b));
    case 'M':
      return depth < MAX_NESTING && validMap(a.M as Record<string, AvroAttributeValue>, depth + 1, true);
    case 'L': {
      if (!Array.isArray(a.L) || depth >= MAX_NESTING) return false;
      for (const e of a.L) if (!validValue(e, depth + 1)) return false;
      return true;
    }
    case 'NULL':
      return a.NULL === true;
    case 'BOOL':
      return typeof a.BOOL === 'boolean';
    default:
      return false;
  }
}

function validMap(m: Record<string, AvroAttributeValue>, depth: number, allowEmptyNames: boolean): boolean {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return false;
  for (const name of Object.keys(m)) {
    if (name.length === 0 && !allowEmptyNames) return false;
    if (!validValue(m[name] as AvroAttributeValue, depth)) return false;
  }
  return true;
}

function validKeys(keys: Record<string, AvroAttributeValue>): boolean {
  if (!validMap(keys, 0, false)) return false;
  const names = Object.keys(keys);
  if (names.length < 1 || names.length > 2) return false;
  for (const name of names) {
    const t = tagOf(keys[name] as AvroAttributeValue);
    if (t !== 'S' && t !== 'N' && t !== 'B') return false;
  }
  return true;
}

/** SDK-shape copy of key attributes (S, N or B only, as validKeys guarantees). */
function sdkKeys(keys: Record<string, AvroAttributeValue>): Record<string, KeyValue> {
  return Object.fromEntries(
    Object.keys(keys).map((name) => {
      const v = keys[name] as AvroAttributeValue;
      return [name, v.S !== null ? { S: v.S } : v.N !== null ? { N: v.N } : { B: v.B as Buffer }];
    }),
  );
}

function checkRetraction(r: AvroRetraction): boolean {
  return (
    r.eventName === 'RETRACT' &&
    typeof r.retractsEventID === 'string' &&
    r.retractsEventID.length >= 1 &&
    r.retractsEventID.length <= 128 &&
    TABLE_NAME_PATTERN.test(r.table) &&
    typeof r.reason === 'string' &&
    r.reason.length >= 1 &&
    r.reason.length <= 256 &&
    isNat(r.retractedAt) &&
    validKeys(r.Keys)
  );
}

const registry = schemaRegistry();
const CURRENT = {
  remove: registry.latest('stream-record'),
  retract: registry.latest('retraction'),
} as const;
const BYTES = {
  remove: ascii('remove'),
  retract: ascii('retract'),
  avro: ascii('avro'),
  removeFingerprint: ascii(CURRENT.remove.fingerprint),
  retractFingerprint: ascii(CURRENT.retract.fingerprint),
};

/**
 * Decode and check a message that claims to be Avro of the current writer schema of its kind.
 * Returns null whenever it cannot vouch for the message (other encoding or schema version,
 * unusual headers, invalid content, undecodable bytes): the caller then uses decodeMessage.
 */
export function checkCurrentAvro(
  value: Buffer | null | undefined,
  headers: MessageHeaders,
): CheckedAvroMessage | null {
  if (!value || value.length === 0) return null;
  // The constant headers are compared as bytes (kafkajs hands headers over as Buffers).
  const kind = headerIs(headers, HEADERS.kind, 'remove', BYTES.remove)
    ? 'remove'
    : headerIs(headers, HEADERS.kind, 'retract', BYTES.retract)
      ? 'retract'
      : null;
  if (kind === null) return null;
  if (!headerIs(headers, HEADERS.encoding, 'avro', BYTES.avro)) return null;
  if (headers[HEADERS.schemaId] !== undefined) return null; // Confluent framing: the caller strips it first
  const writer = CURRENT[kind];
  const fingerprintBytes = kind === 'remove' ? BYTES.removeFingerprint : BYTES.retractFingerprint;
  if (!headerIs(headers, HEADERS.fingerprint, writer.fingerprint, fingerprintBytes)) return null;
  const tableHeader = simpleHeader(headers, HEADERS.table);
  const idHeader = simpleHeader(headers, HEADERS.eventId);
  if (tableHeader === null || idHeader === null) return null;
  try {
    if (kind === 'remove' && writer.fingerprint === WALKED_STREAM_RECORD_FINGERPRINT) {
      // The common message: checked on its bytes, nothing decoded but what the row needs.
      const r = walkRemove(value);
      if (!headerAgrees(tableHeader, r.table) || !headerAgrees(idHeader, r.eventID)) return null;
      return {
        kind,
        table: r.table,
        eventID: r.eventID,
        keys: r.keys,
        deletedAtMs: r.approximateCreationDateTime * 1000,
        sequenceNumber: r.sequenceNumber,
        fingerprint: writer.fingerprint,
      };
    }
    // A stream-record schema the byte walker was not written for: the general path.
    if (kind === 'remove') return null;
    const x = writer.type.fromBuffer(value) as AvroRetraction;
    if (!checkRetraction(x)) return null;
    if (!headerAgrees(tableHeader, x.table) || !headerAgrees(idHeader, x.retractsEventID)) return null;
    return {
      kind,
      table: x.table,
      eventID: x.retractsEventID,
      keys: sdkKeys(x.Keys),
      deletedAtMs: x.retractedAt,
      sequenceNumber: '',
      fingerprint: writer.fingerprint,
    };
  } catch {
    // Undecodable bytes, absurd nesting: decodeMessage says exactly what is wrong.
    return null;
  }
}
