import type { ErrorCode } from '../core/error-codes';
import { TtlstreamError } from '../core/errors';
import type { AvroArchivedRecord } from './archived';
import { ATTRIBUTE_TYPES, type AttributeType } from './attribute-value';
import {
  emptyAttributeValue,
  type AvroAttributeValue,
  type AvroRetraction,
  type AvroStreamRecord,
} from './avro-shape';

/**
 * The one reader of the Avro binary encoding of the stream's records and the archive's rows: the contract check of a
 * message on its bytes (avro-walk.ts) and the Parquet encoding threads' walk of archive rows (parquet-walk.ts) both
 * read through it, and the record readers below decode as avsc decodes (the unit tests compare them over random
 * records). It holds its position itself, so any number of walks can run at once; nothing is kept between them.
 *
 * Whatever it cannot read exactly (bytes that end early, a varint longer than a long's ten bytes, a long a number
 * cannot hold) throws Bail: the caller then decodes the general way, which says what is wrong in its own words.
 */

/** Not an error to report: unwinds a walk to say "cannot vouch"; the caller then decodes the general way. */
export class Bail extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_AVRO_WALK_BAIL';
}
/** One instance: a walk gives up often enough on some data that a stack trace per bail would cost. */
export const BAIL = new Bail('cannot vouch');

/**
 * Each AttributeValue member's field index in the Avro record `ttlstream.AttributeValue`: the order of
 * ATTRIBUTE_TYPES, which is the schemas' (the unit tests compare the two).
 */
export const ATTRIBUTE_FIELD: Readonly<Record<AttributeType, number>> = Object.freeze(
  Object.fromEntries(ATTRIBUTE_TYPES.map((t, i) => [t, i])) as Record<AttributeType, number>,
);
/** Fields of the AttributeValue record: each a ["null", T] union. */
export const ATTRIBUTE_FIELDS = ATTRIBUTE_TYPES.length;
const { S, N, B, SS, NS, BS, M, L, NULL } = ATTRIBUTE_FIELD;

/** The schema versions the record readers are written for (their fingerprints); a new version is not read here. */
export const READ_FINGERPRINTS = {
  streamRecord: '822aff985183f7625f8e865d312526554f0603018c958d908daae09926846405',
  retraction: '742c17aff776add4865f6395edf23b7625597649a73035afa145067011ffca11',
  archivedRecord: '1400ea4e2abb1e796bae03017b8af78deef257702d08ba6097c7c6bb5b0b7b9a',
} as const;

/** 2^28: the part of a varint read with 32-bit integer arithmetic (four bytes of seven bits). */
const LOW = 0x10000000;

/** A read position in Avro bytes. */
export class AvroReader {
  constructor(
    public buf: Buffer,
    public pos = 0,
  ) {}

  /** Read `buf` from `pos` on (one reader over a file's chunks). */
  reset(buf: Buffer, pos = 0): void {
    this.buf = buf;
    this.pos = pos;
  }

  /** The next byte as it is; past the end, Bail. */
  byte(): number {
    const b = this.buf[this.pos++];
    if (b === undefined) throw BAIL;
    return b;
  }

  /**
   * A zig-zag varint long as a number, exact for every safe integer (|n| ≤ 2^53 − 1); a larger long is read whole
   * and then refused (Bail), as avsc refuses it ("potential precision loss"); `bigLong` reads it. Integer arithmetic
   * for the low 28 bits, so no value in range is rounded (avsc's float arithmetic loses the sign of negative longs
   * below −2^52).
   */
  long(): number {
    const buf = this.buf;
    const first = buf[this.pos];
    if (first !== undefined && first < 0x80) {
      // One byte: most of them (union branches, lengths under 64).
      this.pos += 1;
      return (first >> 1) ^ -(first & 1);
    }
    const low = this.varint();
    // z = high × 2^28 + low; n = z / 2 for an even z, −(z + 1) / 2 for an odd one. high < 2^36 is exact, and so
    // is half = floor(z / 2) while it is a safe integer.
    const half = this.high * (LOW / 2) + (low >>> 1);
    const n = low & 1 ? -half - 1 : half;
    if (!Number.isSafeInteger(n)) throw BAIL;
    return n;
  }

  /** A zig-zag varint long as a bigint: every long, −2^63 to 2^63 − 1, exact. */
  bigLong(): bigint {
    const low = this.varint();
    const z = (BigInt(this.high) << 28n) | BigInt(low);
    return (z >> 1n) ^ -(z & 1n);
  }

  /** The bits of the last varint above its low 28 (set by `varint`, so that reading one allocates nothing). */
  private high = 0;

  /** A varint of at most ten bytes: returns its low 28 bits and leaves the rest in `high`. */
  private varint(): number {
    const buf = this.buf;
    let pos = this.pos;
    let low = 0;
    let b = 0x80;
    for (let shift = 0; shift < 28 && b & 0x80; shift += 7) {
      const next = buf[pos++];
      if (next === undefined) throw BAIL;
      b = next;
      low |= (b & 0x7f) << shift;
    }
    let high = 0;
    for (let scale = 1; b & 0x80; scale *= 128) {
      const next = buf[pos++];
      // The tenth byte holds a long's last bit: more is not a long.
      if (next === undefined || scale > 2 ** 35 || (scale === 2 ** 35 && next > 1)) throw BAIL;
      b = next;
      high += (b & 0x7f) * scale;
    }
    this.pos = pos;
    this.high = high;
    return low;
  }

  /** A string or bytes value: its start (its end is then `pos`). */
  span(): number {
    const len = this.long();
    const start = this.pos;
    if (len < 0 || start + len > this.buf.length) throw BAIL;
    this.pos = start + len;
    return start;
  }

  /** A string, decoded as avsc decodes it (bytes that are not UTF-8 become U+FFFD). */
  string(): string {
    const start = this.span();
    return this.buf.toString('utf8', start, this.pos);
  }

  /** Bytes: a view of the buffer (copy it to keep it). */
  bytes(): Buffer {
    const start = this.span();
    return this.buf.subarray(start, this.pos);
  }

  /** A boolean as avsc reads it: any byte but 0 is true. */
  boolean(): boolean {
    return this.byte() !== 0;
  }

  /** The branch of a ["null", T] union: false for null, true for T; any other index, Bail. */
  nullable(): boolean {
    const branch = this.long();
    if (branch === 0) return false;
    if (branch === 1) return true;
    throw BAIL;
  }

  /**
   * Items in the next block of an array or map; 0 at its end. A block may give its size in bytes after its count
   * (a negative count: Avro's writers do so to let a reader skip it), which is read and not needed.
   */
  blockCount(): number {
    const n = this.long();
    if (n >= 0) return n;
    this.long();
    return -n;
  }
}

/** The AttributeValue at the read position, as avsc decodes it (bytes copied out of the buffer). */
export function readAttributeValue(r: AvroReader): AvroAttributeValue {
  const v = emptyAttributeValue();
  for (let field = 0; field < ATTRIBUTE_FIELDS; field++) {
    if (!r.nullable()) continue;
    switch (field) {
      case S:
        v.S = r.string();
        break;
      case N:
        v.N = r.string();
        break;
      case B:
        v.B = copiedBytes(r);
        break;
      case SS:
        v.SS = readArray(r, readString);
        break;
      case NS:
        v.NS = readArray(r, readString);
        break;
      case BS:
        v.BS = readArray(r, copiedBytes);
        break;
      case M:
        v.M = readAttributeMap(r);
        break;
      case L:
        v.L = readArray(r, readAttributeValue);
        break;
      case NULL:
        v.NULL = r.boolean();
        break;
      default:
        v.BOOL = r.boolean();
    }
  }
  return v;
}

const readString = (r: AvroReader): string => r.string();
const copiedBytes = (r: AvroReader): Buffer => Buffer.from(r.bytes());

function readArray<T>(r: AvroReader, item: (r: AvroReader) => T): T[] {
  const items: T[] = [];
  for (let n = r.blockCount(); n > 0; n = r.blockCount()) for (let i = 0; i < n; i++) items.push(item(r));
  return items;
}

/**
 * A map of AttributeValues, as avsc with the archive's map type decodes it (avro-registry.ts): a repeated name
 * keeps its first place and its last value, and "__proto__" is an own property.
 */
export function readAttributeMap(r: AvroReader): Record<string, AvroAttributeValue> {
  const out: Record<string, AvroAttributeValue> = {};
  for (let n = r.blockCount(); n > 0; n = r.blockCount())
    for (let i = 0; i < n; i++) {
      const name = r.string();
      const value = readAttributeValue(r);
      if (name === '__proto__')
        Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
      else out[name] = value;
    }
  return out;
}

/** Reads a record's OldImage: decoded by default; the Parquet walk writes it as JSON as it goes. */
export type ImageReader = (r: AvroReader) => Record<string, AvroAttributeValue>;

/** A stream record (stream-record v1) at the read position. */
export function readStreamRecord(r: AvroReader, oldImage: ImageReader = readAttributeMap): AvroStreamRecord {
  const eventID = r.string();
  const eventName = r.string();
  const eventVersion = r.string();
  const eventSource = r.string();
  const awsRegion = r.string();
  const ApproximateCreationDateTime = r.long();
  const Keys = readAttributeMap(r);
  const OldImage = oldImage(r);
  return {
    eventID,
    eventName,
    eventVersion,
    eventSource,
    awsRegion,
    dynamodb: {
      ApproximateCreationDateTime,
      Keys,
      OldImage,
      SequenceNumber: r.string(),
      SizeBytes: r.long(),
      StreamViewType: r.string(),
    },
    eventSourceARN: r.string(),
    userIdentity: { type: r.string(), principalId: r.string() },
  };
}

/** A retraction (retraction v1) at the read position. */
export function readRetraction(r: AvroReader): AvroRetraction {
  return {
    eventName: r.string(),
    retractsEventID: r.string(),
    table: r.string(),
    Keys: readAttributeMap(r),
    reason: r.string(),
    retractedAt: r.long(),
  };
}

/** An archive row (archived-record v1) at the read position; `oldImage` reads its record's image. */
export function readArchivedRecord(
  r: AvroReader,
  oldImage: ImageReader = readAttributeMap,
): AvroArchivedRecord {
  return {
    topic: r.string(),
    partition: r.long(),
    offset: r.string(),
    kafkaTimestamp: r.long(),
    kind: r.string(),
    table: r.string(),
    eventID: r.string(),
    record: r.nullable() ? readStreamRecord(r, oldImage) : null,
    retraction: r.nullable() ? readRetraction(r) : null,
  };
}
