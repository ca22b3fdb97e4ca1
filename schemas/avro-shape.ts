import type { AttributeMap, AttributeValue } from './attribute-value';
import { ATTRIBUTE_TYPES } from './attribute-value';
import {
  withRecordMaps,
  withRetractionKeys,
  type Retraction,
  type RetractionOf,
  type StreamRecord,
  type StreamRecordOf,
} from './record';
import type { ErrorCode } from '../core/error-codes';
import { TtlstreamError } from '../core/errors';

/** An AttributeValue as the Avro record `ttlstream.AttributeValue`: every tag a nullable field. */
export interface AvroAttributeValue {
  S: string | null;
  N: string | null;
  B: Buffer | null;
  SS: string[] | null;
  NS: string[] | null;
  BS: Buffer[] | null;
  M: Record<string, AvroAttributeValue> | null;
  L: AvroAttributeValue[] | null;
  NULL: boolean | null;
  BOOL: boolean | null;
}

/** An AttributeValue with no tag set: every field null, the one to fill in. */
export function emptyAttributeValue(): AvroAttributeValue {
  return {
    S: null,
    N: null,
    B: null,
    SS: null,
    NS: null,
    BS: null,
    M: null,
    L: null,
    NULL: null,
    BOOL: null,
  };
}

export type AvroStreamRecord = StreamRecordOf<Record<string, AvroAttributeValue>>;
export type AvroRetraction = RetractionOf<Record<string, AvroAttributeValue>>;

/** Thrown when an Avro-shaped value is not a valid AttributeValue (zero or several tags set). */
export class AvroShapeError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_AVRO_SHAPE';
}

function toBuffer(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.length);
}

/** Copy, so a decoded value does not pin (or alias) the whole Kafka message buffer. */
function toBytes(b: Buffer): Uint8Array {
  return new Uint8Array(b);
}

/** Object.fromEntries keeps a "__proto__" key as an own property; `out[k] = v` would not. */
function mapValues<A, B>(m: Record<string, A>, f: (v: A) => B): Record<string, B> {
  return Object.fromEntries(Object.keys(m).map((k) => [k, f(m[k] as A)]));
}

export function toAvroAttributeValue(v: AttributeValue): AvroAttributeValue {
  return {
    S: v.S ?? null,
    N: v.N ?? null,
    B: v.B !== undefined ? toBuffer(v.B) : null,
    SS: v.SS ?? null,
    NS: v.NS ?? null,
    BS: v.BS !== undefined ? v.BS.map(toBuffer) : null,
    M: v.M !== undefined ? toAvroMap(v.M) : null,
    L: v.L !== undefined ? v.L.map(toAvroAttributeValue) : null,
    NULL: v.NULL ?? null,
    BOOL: v.BOOL ?? null,
  };
}

export function toAvroMap(m: AttributeMap): Record<string, AvroAttributeValue> {
  return mapValues(m, toAvroAttributeValue);
}

export function fromAvroAttributeValue(a: AvroAttributeValue): AttributeValue {
  const present = ATTRIBUTE_TYPES.filter((t) => a[t] !== null && a[t] !== undefined);
  const tag = present[0];
  if (present.length !== 1 || tag === undefined) {
    throw new AvroShapeError(
      `an AttributeValue has exactly one non-null field; got ${present.join(', ') || 'none'}`,
    );
  }
  switch (tag) {
    case 'B':
      return { B: toBytes(a.B as Buffer) };
    case 'BS':
      return { BS: (a.BS as Buffer[]).map(toBytes) };
    case 'M':
      return { M: fromAvroMap(a.M as Record<string, AvroAttributeValue>) };
    case 'L':
      return { L: (a.L as AvroAttributeValue[]).map(fromAvroAttributeValue) };
    default:
      return { [tag]: a[tag] } as unknown as AttributeValue;
  }
}

export function fromAvroMap(m: Record<string, AvroAttributeValue>): AttributeMap {
  return mapValues(m, fromAvroAttributeValue);
}

export function toAvroStreamRecord(r: StreamRecord): AvroStreamRecord {
  return {
    ...withRecordMaps(r, toAvroMap),
    // The Avro field is a required record (a union would break the schema family's compatibility with older
    // readers): a record without an identity has both strings empty.
    userIdentity: r.userIdentity
      ? { type: r.userIdentity.type, principalId: r.userIdentity.principalId }
      : { ...NO_IDENTITY },
  };
}

/** The Avro form of "no userIdentity": a REMOVE that DynamoDB's TTL did not make. */
export const NO_IDENTITY = { type: '', principalId: '' } as const;

/** Avro shape → SDK shape, unvalidated: callers run the result through StreamRecordSchema. */
export function fromAvroStreamRecord(a: AvroStreamRecord): unknown {
  return {
    ...withRecordMaps(a, fromAvroMap),
    ...(a.userIdentity.type === '' && a.userIdentity.principalId === ''
      ? {}
      : { userIdentity: { type: a.userIdentity.type, principalId: a.userIdentity.principalId } }),
  };
}

export function toAvroRetraction(r: Retraction): AvroRetraction {
  return withRetractionKeys(r, toAvroMap);
}

export function fromAvroRetraction(a: AvroRetraction): unknown {
  return withRetractionKeys(a, fromAvroMap);
}
