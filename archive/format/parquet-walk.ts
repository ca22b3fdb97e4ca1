import { isUtf8 } from 'node:buffer';
import {
  ATTRIBUTE_FIELD,
  ATTRIBUTE_FIELDS,
  AvroReader,
  BAIL,
  READ_FINGERPRINTS,
  readArchivedRecord,
  readAttributeValue,
} from '../../schemas/avro-reader';
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
 * of the encoding thread's per-row work and garbage. The bytes are read by the one Avro reader
 * (schemas/avro-reader.ts), and the bytes written are exactly those of `dynamoJsonMap` and
 * `plainJsonMap` over the decoded image (test/unit/archive/format/parquet-walk.test.ts compares
 * them over every AttributeValue type). Written for archived-record v1 alone, by its fingerprint;
 * wherever the walk cannot vouch for the same bytes (a map key that JavaScript would reorder, a
 * repeated key, an AttributeValue with no or two members, a long a number cannot hold, bytes cut
 * short) it gives up (`null`) and the caller decodes the file the general way.
 */
export const WALKED_ARCHIVED_RECORD_FINGERPRINT = READ_FINGERPRINTS.archivedRecord;

export interface WalkedRows {
  /** Each row as avsc decodes it, but with only the `keep` attributes of its OldImage. */
  rows: AvroArchivedRecord[];
  /** Each row's OldImage as DynamoDB JSON and as plain JSON (UTF-8); null for a retraction. */
  dynamoImages: Array<Uint8Array | null>;
  plainImages: Array<Uint8Array | null>;
}

const { S, N, B, SS, NS, BS, M, L, NULL } = ATTRIBUTE_FIELD;

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

/**
 * One walk over a file's rows: the Avro reader (avro-reader.ts) with the two image texts it writes. One per file,
 * so walks on several threads, or one after another, share nothing.
 */
class ImageWalk extends AvroReader {
  readonly dyn = new Out();
  readonly plain = new Out();

  constructor(room: number) {
    super(Buffer.alloc(0));
    this.dyn.room(room);
    this.plain.room(room);
  }

  /**
   * The Avro string at the read position as a JSON string literal, into both texts: decoded as avsc
   * decodes it (text that is not UTF-8 becomes U+FFFD alike) and written by JSON.stringify, as the
   * general way does.
   */
  jsonStringBoth(): void {
    const from = this.span();
    const to = this.pos;
    if (literalAsIs(this.buf, from, to)) {
      this.dyn.quoted(this.buf, from, to);
      this.plain.quoted(this.buf, from, to);
      return;
    }
    const literal = JSON.stringify(this.buf.toString('utf8', from, to));
    this.dyn.text(literal);
    this.plain.text(literal);
  }

  /** The AttributeValue at the read position: which member it has (exactly one, or the walk gives up). */
  memberOf(): number {
    // Each of the ten fields is a ["null", T] union; the member's value follows its branch index, so the fields
    // before it are all null (index 0) and the ones after it too (checked once the value is read).
    for (let f = 0; f < ATTRIBUTE_FIELDS; f++) if (this.nullable()) return f;
    throw BAIL;
  }

  restAreNull(member: number): void {
    for (let f = member + 1; f < ATTRIBUTE_FIELDS; f++) if (this.nullable()) throw BAIL;
  }

  /** A number: its text as a JSON string into `dyn`, canonical as a JSON number into `plain`. */
  number(): void {
    const text = this.string();
    this.dyn.text(JSON.stringify(text));
    this.plain.ascii(canonicalNumber(text));
  }

  /** Bytes: as a base64 JSON string into both texts. */
  base64Both(): void {
    const b64 = this.bytes().toString('base64');
    this.dyn.byte(0x22);
    this.dyn.ascii(b64);
    this.dyn.byte(0x22);
    this.plain.byte(0x22);
    this.plain.ascii(b64);
    this.plain.byte(0x22);
  }

  /** One item of an array, by the member the array belongs to. */
  item(member: number): void {
    if (member === SS) this.jsonStringBoth();
    else if (member === NS) this.number();
    else if (member === BS) this.base64Both();
    else this.attributeValue();
  }

  /** One AttributeValue as DynamoDB JSON into `dyn` and as plain JSON into `plain`. */
  attributeValue(): void {
    const member = this.memberOf();
    // Each opening a literal of its own: the compiler writes a constant string's bytes without reading it.
    switch (member) {
      case S:
        this.dyn.ascii('{"S":');
        this.jsonStringBoth();
        break;
      case N:
        this.dyn.ascii('{"N":');
        this.number();
        break;
      case B:
        this.dyn.ascii('{"B":');
        this.base64Both();
        break;
      case SS:
        this.dyn.ascii('{"SS":');
        this.array(member);
        break;
      case NS:
        this.dyn.ascii('{"NS":');
        this.array(member);
        break;
      case BS:
        this.dyn.ascii('{"BS":');
        this.array(member);
        break;
      case M:
        this.dyn.ascii('{"M":');
        this.map(null);
        break;
      case L:
        this.dyn.ascii('{"L":');
        this.array(member);
        break;
      case NULL:
        // The general way writes NULL as true whatever it holds (the contract allows only true).
        this.byte();
        this.dyn.ascii('{"NULL":true');
        this.plain.ascii('null');
        break;
      default: {
        const value = this.boolean();
        this.dyn.ascii(value ? '{"BOOL":true' : '{"BOOL":false');
        this.plain.ascii(value ? 'true' : 'false');
      }
    }
    this.dyn.byte(0x7d);
    this.restAreNull(member);
  }

  /** An Avro array of `member`'s items into both texts as a JSON array. */
  array(member: number): void {
    this.dyn.byte(0x5b);
    this.plain.byte(0x5b);
    let first = true;
    for (let count = this.blockCount(); count > 0; count = this.blockCount()) {
      for (let i = 0; i < count; i++) {
        if (!first) {
          this.dyn.byte(0x2c);
          this.plain.byte(0x2c);
        }
        first = false;
        this.item(member);
      }
    }
    this.dyn.byte(0x5d);
    this.plain.byte(0x5d);
  }

  /**
   * An Avro map of AttributeValues into both texts as a JSON object, in the map's order: the order of
   * `Object.keys` over the decoded map as long as no key is an array index (JavaScript puts those
   * first) and none repeats, which is checked. The values of the `keep` attributes are decoded too.
   */
  map(keep: { names: readonly string[]; into: Record<string, AvroAttributeValue> } | null): void {
    const { dyn, plain } = this;
    dyn.byte(0x7b);
    plain.byte(0x7b);
    const seen: string[] = [];
    for (let count = this.blockCount(); count > 0; count = this.blockCount()) {
      for (let i = 0; i < count; i++) {
        const name = this.string();
        const first = name.charCodeAt(0);
        if (first >= 0x30 && first <= 0x39) throw BAIL; // maybe an array index
        if (seen.includes(name)) throw BAIL;
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
          const valueAt = this.pos;
          this.attributeValue();
          const after = this.pos;
          this.pos = valueAt;
          keep.into[name] = readAttributeValue(this);
          if (this.pos !== after) throw BAIL;
        } else this.attributeValue();
      }
    }
    dyn.byte(0x7d);
    plain.byte(0x7d);
  }

  /** The attributes of each OldImage decoded as well as written (the key's and the TTL's). */
  private keep: readonly string[] = [];

  /** A record's OldImage: written into both texts, its `keep` attributes decoded. */
  private readonly oldImage = (): Record<string, AvroAttributeValue> => {
    const into: Record<string, AvroAttributeValue> = {};
    this.map({ names: this.keep, into });
    return into;
  };

  /** One archive row (archived-record v1) at the read position, its image into both texts. */
  row(
    keep: readonly string[],
    dynamoImages: Array<Uint8Array | null>,
    plainImages: Array<Uint8Array | null>,
  ) {
    const { dyn, plain } = this;
    const dynFrom = dyn.at;
    const plainFrom = plain.at;
    this.keep = keep;
    const row = readArchivedRecord(this, this.oldImage);
    const image = row.record !== null;
    dynamoImages.push(image ? dyn.bytes.subarray(dynFrom, dyn.at) : null);
    plainImages.push(image ? plain.bytes.subarray(plainFrom, plain.at) : null);
    return row;
  }
}

/**
 * Whether the string bytes `buf[from, to)` are, between quotes, the JSON literal JSON.stringify
 * writes for their text: UTF-8 that decodes without a U+FFFD substitute (so encodes back to the
 * same bytes, and holds no lone surrogate) and holds nothing JSON.stringify escapes (`"`, `\`, a
 * control character below U+0020). Most attribute text is: it is then copied, not decoded,
 * escaped and encoded twice (test/unit/archive/format/parquet-walk.test.ts compares the two).
 */
function literalAsIs(buf: Buffer, from: number, to: number): boolean {
  let high = 0;
  for (let i = from; i < to; i++) {
    const b = buf[i] as number;
    if (b < 0x20 || b === 0x22 || b === 0x5c) return false;
    high |= b;
  }
  return high < 0x80 || isUtf8(buf.subarray(from, to));
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
  const walk = new ImageWalk(total + 1024);
  try {
    for (const chunk of chunks) {
      walk.reset(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      while (walk.pos < walk.buf.length) rows.push(walk.row(keep, dynamoImages, plainImages));
      if (walk.pos !== walk.buf.length) return null;
    }
  } catch {
    // Given up, or bytes the general way rejects and reports in its own words (a number that is not one).
    return null;
  }
  // The texts grew into new arrays as they were written: take each image from the final one.
  return { rows, dynamoImages: rebase(dynamoImages, walk.dyn), plainImages: rebase(plainImages, walk.plain) };
}

function rebase(images: Array<Uint8Array | null>, out: Out): Array<Uint8Array | null> {
  return images.map((v) =>
    v === null || v.buffer === out.bytes.buffer
      ? v
      : out.bytes.subarray(v.byteOffset, v.byteOffset + v.byteLength),
  );
}
