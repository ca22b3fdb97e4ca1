import { isUtf8 } from 'node:buffer';
import { Bail } from '../../schemas/avro-walk';
import {
  canonicalNumber,
  SCHEMA_FINGERPRINTS,
  type AvroArchivedRecord,
  type AvroAttributeValue,
} from '../../schemas';

/**
 * The rows of a Parquet data file read from their Avro archive-row bytes with the two image
 * columns written straight from those bytes, without decoding the images into objects and
 * serialising them again: decoding each row and building the two JSON texts of its image was most
 * of the encoding thread's per-row work and garbage. The bytes written are exactly those of
 * `dynamoJsonMap` and `plainJsonMap` over the decoded image (test/unit/archiver/parquet-walk.test.ts
 * compares them over every AttributeValue type). Written for archived-record v1 alone, by its
 * fingerprint; wherever the walk cannot vouch for the same bytes (a map key that JavaScript
 * would reorder, a repeated key, text that is not UTF-8, an AttributeValue with no or two
 * members, a long beyond 2^53) it gives up (`null`) and the caller decodes the file the general way.
 */
export const WALKED_ARCHIVED_RECORD_FINGERPRINT =
  '1400ea4e2abb1e796bae03017b8af78deef257702d08ba6097c7c6bb5b0b7b9a';

export interface WalkedRows {
  /** Each row as avsc decodes it, but with only the `keep` attributes of its OldImage. */
  rows: AvroArchivedRecord[];
  /** Each row's OldImage as DynamoDB JSON and as plain JSON (UTF-8); null for a retraction. */
  dynamoImages: Array<Uint8Array | null>;
  plainImages: Array<Uint8Array | null>;
}

const GIVE_UP = new Bail('cannot vouch');

/** The read position in the rows' bytes. */
let buf: Buffer = Buffer.alloc(0);
let pos = 0;

function readLong(): number {
  const first = buf[pos];
  if (first !== undefined && first < 0x80) {
    // One byte: most of them (union branches, lengths under 64).
    pos += 1;
    return (first >> 1) ^ -(first & 1);
  }
  let n = 0;
  let scale = 1;
  let b: number;
  do {
    b = buf[pos++] as number;
    if (b === undefined) throw GIVE_UP;
    n += (b & 0x7f) * scale;
    scale *= 128;
    if (scale > 2 ** 56) throw GIVE_UP;
  } while (b & 0x80);
  if (n > Number.MAX_SAFE_INTEGER) throw GIVE_UP;
  return n % 2 === 1 ? -(n + 1) / 2 : n / 2;
}

function readLength(): number {
  const n = readLong();
  if (n < 0 || pos + n > buf.length) throw GIVE_UP;
  return n;
}

function readString(): string {
  const n = readLength();
  pos += n;
  return buf.toString('utf8', pos - n, pos);
}

function readBytes(): Buffer {
  const n = readLength();
  pos += n;
  return buf.subarray(pos - n, pos);
}

/** Items in the next block of an array or map (0: the end); a negative count (a sized block) is given up on. */
function readBlockCount(): number {
  const n = readLong();
  if (n < 0) throw GIVE_UP;
  return n;
}

/** One output text, growing. */
class Out {
  bytes = Buffer.allocUnsafeSlow(64 * 1024);
  at = 0;

  room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.at + n));
    this.bytes.copy(grown, 0, 0, this.at);
    this.bytes = grown;
  }

  /** Any text, as UTF-8. */
  text(s: string): void {
    this.room(s.length * 3);
    this.at += this.bytes.write(s, this.at, 'utf8');
  }

  ascii(s: string): void {
    this.room(s.length);
    for (let i = 0; i < s.length; i++) this.bytes[this.at++] = s.charCodeAt(i);
  }

  byte(b: number): void {
    this.room(1);
    this.bytes[this.at++] = b;
  }

  /** `src[from, to)` between double quotes, as it is. */
  quoted(src: Buffer, from: number, to: number): void {
    this.room(to - from + 2);
    this.bytes[this.at++] = 0x22;
    this.at += src.copy(this.bytes, this.at, from, to);
    this.bytes[this.at++] = 0x22;
  }
}

let dyn = new Out();
let plain = new Out();

/**
 * The Avro string at the read position as a JSON string literal, into both texts: decoded as avsc
 * decodes it (text that is not UTF-8 becomes U+FFFD alike) and written by JSON.stringify, as the
 * general way does.
 */
function jsonStringBoth(): void {
  const n = readLength();
  const from = pos;
  pos += n;
  if (literalAsIs(from, pos)) {
    dyn.quoted(buf, from, pos);
    plain.quoted(buf, from, pos);
    return;
  }
  const literal = JSON.stringify(buf.toString('utf8', from, pos));
  dyn.text(literal);
  plain.text(literal);
}

/**
 * Whether the string bytes `buf[from, to)` are, between quotes, the JSON literal JSON.stringify
 * writes for their text: UTF-8 that decodes without a U+FFFD substitute (so encodes back to the
 * same bytes, and holds no lone surrogate) and holds nothing JSON.stringify escapes (`"`, `\`, a
 * control character below U+0020). Most attribute text is: it is then copied, not decoded,
 * escaped and encoded twice (test/unit/archiver/format/parquet-walk.test.ts compares the two).
 */
function literalAsIs(from: number, to: number): boolean {
  let high = 0;
  for (let i = from; i < to; i++) {
    const b = buf[i] as number;
    if (b < 0x20 || b === 0x22 || b === 0x5c) return false;
    high |= b;
  }
  return high < 0x80 || isUtf8(buf.subarray(from, to));
}

const ATTRIBUTE_FIELDS = 10;
const [S, N, B, SS, NS, BS, M, L, NULL, BOOL] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/** The AttributeValue at the read position: which member it has (exactly one, or the walk gives up). */
function memberOf(): number {
  // Each of the ten fields is a ["null", T] union; the member's value follows its branch index, so the fields
  // before it are all null (index 0) and the ones after it too (checked once the value is read).
  for (let f = 0; f < ATTRIBUTE_FIELDS; f++) {
    const branch = readLong();
    if (branch === 1) return f;
    if (branch !== 0) throw GIVE_UP;
  }
  throw GIVE_UP;
}

function restAreNull(member: number): void {
  for (let f = member + 1; f < ATTRIBUTE_FIELDS; f++) if (readLong() !== 0) throw GIVE_UP;
}

/** A number: its text as a JSON string into `dyn`, canonical as a JSON number into `plain`. */
function number(): void {
  const text = readString();
  dyn.text(JSON.stringify(text));
  plain.ascii(canonicalNumber(text));
}

/** Bytes: as a base64 JSON string into both texts. */
function base64Both(): void {
  const b64 = readBytes().toString('base64');
  dyn.byte(0x22);
  dyn.ascii(b64);
  dyn.byte(0x22);
  plain.byte(0x22);
  plain.ascii(b64);
  plain.byte(0x22);
}

/** One item of an array, by the member the array belongs to. */
function item(member: number): void {
  if (member === SS) jsonStringBoth();
  else if (member === NS) number();
  else if (member === BS) base64Both();
  else attributeValue();
}

/** One AttributeValue as DynamoDB JSON into `dyn` and as plain JSON into `plain`. */
function attributeValue(): void {
  const member = memberOf();
  switch (member) {
    case S:
      dyn.ascii('{"S":');
      jsonStringBoth();
      break;
    case N:
      dyn.ascii('{"N":');
      number();
      break;
    case B:
      dyn.ascii('{"B":');
      base64Both();
      break;
    case SS:
    case NS:
    case BS:
    case L:
      dyn.ascii(member === SS ? '{"SS":' : member === NS ? '{"NS":' : member === BS ? '{"BS":' : '{"L":');
      array(member);
      break;
    case M:
      dyn.ascii('{"M":');
      map(null);
      break;
    case NULL:
      // The general way writes NULL as true whatever it holds (the contract allows only true).
      pos += 1;
      dyn.ascii('{"NULL":true');
      plain.ascii('null');
      break;
    default: {
      const value = buf[pos++];
      if (value !== 0 && value !== 1) throw GIVE_UP;
      dyn.ascii(value ? '{"BOOL":true' : '{"BOOL":false');
      plain.ascii(value ? 'true' : 'false');
    }
  }
  dyn.byte(0x7d);
  restAreNull(member);
}

/** An Avro array of `member`'s items into both texts as a JSON array. */
function array(member: number): void {
  dyn.byte(0x5b);
  plain.byte(0x5b);
  let first = true;
  for (let count = readBlockCount(); count > 0; count = readBlockCount()) {
    for (let i = 0; i < count; i++) {
      if (!first) {
        dyn.byte(0x2c);
        plain.byte(0x2c);
      }
      first = false;
      item(member);
    }
  }
  dyn.byte(0x5d);
  plain.byte(0x5d);
}

/**
 * An Avro map of AttributeValues into both texts as a JSON object, in the map's order: the order of
 * `Object.keys` over the decoded map as long as no key is an array index (JavaScript puts those
 * first) and none repeats, which is checked. The values of the `keep` attributes are decoded too.
 */
function map(keep: { names: readonly string[]; into: Record<string, AvroAttributeValue> } | null): void {
  dyn.byte(0x7b);
  plain.byte(0x7b);
  const seen: string[] = [];
  for (let count = readBlockCount(); count > 0; count = readBlockCount()) {
    for (let i = 0; i < count; i++) {
      const name = readString();
      const first = name.charCodeAt(0);
      if (first >= 0x30 && first <= 0x39) throw GIVE_UP; // maybe an array index
      if (seen.includes(name)) throw GIVE_UP;
      seen.push(name);
      if (seen.length > 1) {
        dyn.byte(0x2c);
        plain.byte(0x2c);
      }
      const literal = JSON.stringify(name);
      dyn.text(literal);
      dyn.byte(0x3a);
      plain.text(literal);
      plain.byte(0x3a);
      if (keep?.names.includes(name)) {
        const valueAt = pos;
        attributeValue();
        const after = pos;
        pos = valueAt;
        keep.into[name] = attributeValueObject();
        if (pos !== after) throw GIVE_UP;
      } else attributeValue();
    }
  }
  dyn.byte(0x7d);
  plain.byte(0x7d);
}

/** The AttributeValue at the read position as avsc decodes it (a key attribute, a TTL attribute). */
function attributeValueObject(): AvroAttributeValue {
  const v: AvroAttributeValue = {
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
  const member = memberOf();
  if (member === S) v.S = readString();
  else if (member === N) v.N = readString();
  else if (member === B) v.B = Buffer.from(readBytes());
  else if (member === M) v.M = mapObject();
  else if (member === NULL) v.NULL = buf[pos++] === 1;
  else if (member === BOOL) v.BOOL = buf[pos++] === 1;
  else if (member === L) {
    const items: AvroAttributeValue[] = [];
    for (let count = readBlockCount(); count > 0; count = readBlockCount())
      for (let i = 0; i < count; i++) items.push(attributeValueObject());
    v.L = items;
  } else if (member === BS) {
    const items: Buffer[] = [];
    for (let count = readBlockCount(); count > 0; count = readBlockCount())
      for (let i = 0; i < count; i++) items.push(Buffer.from(readBytes()));
    v.BS = items;
  } else {
    const items: string[] = [];
    for (let count = readBlockCount(); count > 0; count = readBlockCount())
      for (let i = 0; i < count; i++) items.push(readString());
    if (member === SS) v.SS = items;
    else v.NS = items;
  }
  restAreNull(member);
  return v;
}

function mapObject(): Record<string, AvroAttributeValue> {
  const out: Record<string, AvroAttributeValue> = {};
  for (let count = readBlockCount(); count > 0; count = readBlockCount())
    for (let i = 0; i < count; i++) {
      const name = readString();
      if (Object.hasOwn(out, name)) throw GIVE_UP;
      const value = attributeValueObject();
      // An own "__proto__" attribute, as the archive's decoder keeps it (schemas/avro-registry.ts).
      if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true });
      else out[name] = value;
    }
  return out;
}

/** One archive row (archived-record v1) at the read position. */
function walkRow(
  keep: readonly string[],
  dynamoImages: Array<Uint8Array | null>,
  plainImages: Array<Uint8Array | null>,
) {
  const topic = readString();
  const partition = readLong();
  const offset = readString();
  const kafkaTimestamp = readLong();
  const kind = readString();
  const table = readString();
  const eventID = readString();
  const out: AvroArchivedRecord = {
    topic,
    partition,
    offset,
    kafkaTimestamp,
    kind,
    table,
    eventID,
    record: null,
    retraction: null,
  };
  let branch = readLong();
  if (branch === 1) {
    const recordEventID = readString();
    const eventName = readString();
    const eventVersion = readString();
    const eventSource = readString();
    const awsRegion = readString();
    const ApproximateCreationDateTime = readLong();
    const Keys = mapObject();
    const OldImage: Record<string, AvroAttributeValue> = {};
    const dynFrom = dyn.at;
    const plainFrom = plain.at;
    map({ names: keep, into: OldImage });
    dynamoImages.push(dyn.bytes.subarray(dynFrom, dyn.at));
    plainImages.push(plain.bytes.subarray(plainFrom, plain.at));
    out.record = {
      eventID: recordEventID,
      eventName,
      eventVersion,
      eventSource,
      awsRegion,
      dynamodb: {
        ApproximateCreationDateTime,
        Keys,
        OldImage,
        SequenceNumber: readString(),
        SizeBytes: readLong(),
        StreamViewType: readString(),
      },
      eventSourceARN: readString(),
      userIdentity: { type: readString(), principalId: readString() },
    };
  } else if (branch !== 0) throw GIVE_UP;
  else {
    dynamoImages.push(null);
    plainImages.push(null);
  }
  branch = readLong();
  if (branch === 1)
    out.retraction = {
      eventName: readString(),
      retractsEventID: readString(),
      table: readString(),
      Keys: mapObject(),
      reason: readString(),
      retractedAt: readLong(),
    };
  else if (branch !== 0) throw GIVE_UP;
  return out;
}

/**
 * The rows of these chunks (archive rows end to end) with their image texts, decoding of the
 * OldImage only the attributes named in `keep`; null when the walk cannot vouch for the bytes.
 */
export function walkRowChunks(chunks: readonly Uint8Array[], keep: readonly string[]): WalkedRows | null {
  if (SCHEMA_FINGERPRINTS.archivedRecord !== WALKED_ARCHIVED_RECORD_FINGERPRINT) return null;
  const rows: AvroArchivedRecord[] = [];
  const dynamoImages: Array<Uint8Array | null> = [];
  const plainImages: Array<Uint8Array | null> = [];
  const total = chunks.reduce((sum, c) => sum + c.byteLength, 0);
  dyn = new Out();
  plain = new Out();
  dyn.room(total + 1024);
  plain.room(total + 1024);
  try {
    for (const chunk of chunks) {
      buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      pos = 0;
      while (pos < buf.length) rows.push(walkRow(keep, dynamoImages, plainImages));
      if (pos !== buf.length) return null;
    }
  } catch {
    // Given up, or bytes the general way rejects and reports in its own words (a number that is not one).
    return null;
  } finally {
    buf = Buffer.alloc(0);
  }
  // The texts grew into new arrays as they were written: take each image from the final one.
  return { rows, dynamoImages: rebase(dynamoImages, dyn), plainImages: rebase(plainImages, plain) };
}

function rebase(images: Array<Uint8Array | null>, out: Out): Array<Uint8Array | null> {
  return images.map((v) =>
    v === null || v.buffer === out.bytes.buffer
      ? v
      : out.bytes.subarray(v.byteOffset, v.byteOffset + v.byteLength),
  );
}
