import { MAX_NESTING, NUMBER_PATTERN } from './attribute-value';
import { STREAM_ARN_PATTERN } from './record';

/**
 * The contract check of a stream-record v1 message done on its Avro bytes, without decoding it
 * into objects (most of the archiver's per-record cost was building and then discarding them).
 * Like checkCurrentAvro it only says "valid" or "cannot vouch" (throws Bail): whenever it is
 * unsure (a non-canonical encoding, a duplicate map key, an out-of-range long) the caller goes
 * the general way. It is written for exactly one schema, identified by its fingerprint below;
 * a new schema version is simply not walked.
 */
export const WALKED_STREAM_RECORD_FINGERPRINT =
  '822aff985183f7625f8e865d312526554f0603018c958d908daae09926846405';

export class Bail extends Error {}
const BAIL = new Bail('cannot vouch');

export type KeyValue = { S: string } | { N: string } | { B: Uint8Array };

export interface WalkedRemove {
  eventID: string;
  table: string;
  keys: Record<string, KeyValue>;
  approximateCreationDateTime: number;
  sequenceNumber: string;
}

const SEQUENCE_NUMBER = /^\d{21,40}$/;
const REGION = /^[a-z0-9-]+$/;
const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
const REMOVE = ascii('REMOVE');
const VERSION = ascii('1.1');
const SOURCE = ascii('aws:dynamodb');
const SERVICE = ascii('Service');
const PRINCIPAL = ascii('dynamodb.amazonaws.com');
const VIEW_NEW_AND_OLD = ascii('NEW_AND_OLD_IMAGES');
const VIEW_OLD = ascii('OLD_IMAGE');

/** Indexes of the AttributeValue fields (all ["null", T]). */
const S = 0;
const N = 1;
const B = 2;
const SS = 3;
const NS = 4;
const BS = 5;
const M = 6;
const L = 7;
const NULL = 8;
const BOOL = 9;

class Walker {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  /** Zig-zag varint; at most 7 bytes (|n| < 2^48), so every value is exact. */
  long(): number {
    const buf = this.buf;
    let n = 0;
    let f = 1;
    for (let k = 0; k < 7; k++) {
      if (this.pos >= buf.length) throw BAIL;
      const b = buf[this.pos++] as number;
      n += (b & 0x7f) * f;
      if ((b & 0x80) === 0) return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
      f *= 128;
    }
    throw BAIL;
  }

  /** Start and end of the next string or bytes value. */
  span(): number {
    const len = this.long();
    if (len < 0 || this.pos + len > this.buf.length) throw BAIL;
    const start = this.pos;
    this.pos += len;
    return start;
  }

  string(): string {
    const start = this.span();
    return this.buf.toString('utf8', start, this.pos);
  }

  equals(expected: Buffer): boolean {
    const start = this.span();
    return (
      this.pos - start === expected.length &&
      this.buf.compare(expected, 0, expected.length, start, this.pos) === 0
    );
  }

  /** Union index of a ["null", T] field: false for null, true for T. */
  present(): boolean {
    const b = this.buf[this.pos++];
    if (b === 0) return false;
    if (b === 2) return true;
    throw BAIL; // out of range, or not the one-byte canonical form
  }

  /** Number of items of the next array/map block; 0 at the end. */
  blockCount(): number {
    let n = this.long();
    if (n < 0) {
      n = -n;
      this.long(); // block size in bytes
    }
    return n;
  }

  number(): void {
    if (!NUMBER_PATTERN.test(this.string())) throw BAIL;
  }

  /**
   * One AttributeValue at `depth` (as parseValue): exactly one field set, with valid content.
   * Returns the tag index.
   */
  value(depth: number): number {
    let tag = -1;
    for (let field = 0; field < 10; field++) {
      if (!this.present()) continue;
      if (tag !== -1) throw BAIL;
      tag = field;
      switch (field) {
        case S:
        case B:
          this.span();
          break;
        case N:
          this.number();
          break;
        case SS:
        case BS:
        case NS: {
          let total = 0;
          for (let n = this.blockCount(); n > 0; n = this.blockCount()) {
            total += n;
            for (let i = 0; i < n; i++) {
              if (field === NS) this.number();
              else this.span();
            }
          }
          if (total === 0) throw BAIL;
          break;
        }
        case M:
          if (depth >= MAX_NESTING) throw BAIL;
          this.map(depth + 1);
          break;
        case L:
          if (depth >= MAX_NESTING) throw BAIL;
          for (let n = this.blockCount(); n > 0; n = this.blockCount())
            for (let i = 0; i < n; i++) this.value(depth + 1);
          break;
        case NULL:
          // avsc reads any non-zero byte as true; only the canonical 1 is vouched for.
          if (this.buf[this.pos++] !== 1) throw BAIL;
          break;
        case BOOL: {
          const b = this.buf[this.pos++];
          if (b !== 0 && b !== 1) throw BAIL;
          break;
        }
      }
    }
    if (tag === -1) throw BAIL;
    return tag;
  }

  /** A map of AttributeValues whose names are not needed (nested M). */
  map(depth: number): void {
    for (let n = this.blockCount(); n > 0; n = this.blockCount()) {
      for (let i = 0; i < n; i++) {
        this.span();
        this.value(depth);
      }
    }
  }
}

interface KeyEntry {
  name: string;
  /** The name's bytes in the message. */
  nameStart: number;
  nameEnd: number;
  value: KeyValue;
  start: number;
  end: number;
}

function readKeys(w: Walker): KeyEntry[] {
  const keys: KeyEntry[] = [];
  for (let n = w.blockCount(); n > 0; n = w.blockCount()) {
    for (let i = 0; i < n; i++) {
      const nameStart = w.span();
      const nameEnd = w.pos;
      const name = w.buf.toString('utf8', nameStart, nameEnd);
      if (name.length === 0 || keys.some((k) => k.name === name) || keys.length >= 2) throw BAIL;
      const start = w.pos;
      const tag = w.value(0);
      const end = w.pos;
      // The value's one present field is its last string/bytes: [start + tag unions .. end).
      const bodyStart = start + tag + 1;
      const w2 = new Walker(w.buf);
      w2.pos = bodyStart;
      const s = w2.span();
      let value: KeyValue;
      if (tag === S) value = { S: w.buf.toString('utf8', s, w2.pos) };
      else if (tag === N) value = { N: w.buf.toString('utf8', s, w2.pos) };
      else if (tag === B) value = { B: w.buf.subarray(s, w2.pos) };
      else throw BAIL;
      keys.push({ name, nameStart, nameEnd, value, start, end });
    }
  }
  if (keys.length === 0) throw BAIL;
  return keys;
}

function isAscii(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if ((buf[i] as number) >= 0x80) return false;
  return true;
}

/**
 * Whether the map entry name at [start, end) is the key's name, as avsc would decide (decoded
 * UTF-8, invalid bytes as U+FFFD). For an ASCII key name only the same bytes decode to it, so the
 * bytes are compared without decoding.
 */
function sameName(buf: Buffer, key: KeyEntry, start: number, end: number, ascii: boolean): boolean {
  if (ascii)
    return (
      end - start === key.nameEnd - key.nameStart &&
      buf.compare(buf, key.nameStart, key.nameEnd, start, end) === 0
    );
  return buf.toString('utf8', start, end) === key.name;
}

/** Walk a stream-record v1 message; throws Bail when it cannot vouch for it. */
export function walkRemove(buf: Buffer): WalkedRemove {
  const w = new Walker(buf);
  const eventID = w.string();
  if (eventID.length < 1 || eventID.length > 128) throw BAIL;
  if (!w.equals(REMOVE) || !w.equals(VERSION) || !w.equals(SOURCE)) throw BAIL;
  const awsRegion = w.string();
  if (!REGION.test(awsRegion)) throw BAIL;
  // dynamodb
  const approximateCreationDateTime = w.long();
  if (approximateCreationDateTime < 0) throw BAIL;
  const keys = readKeys(w);
  // OldImage: every value valid; for key names, the last entry of that name (avsc keeps the last).
  // ASCII key names can only be spelled one way; otherwise names are compared as avsc reads them.
  const asciiNames = keys.every((k) => isAscii(buf, k.nameStart, k.nameEnd));
  const found: Array<{ start: number; end: number } | undefined> = keys.map(() => undefined);
  for (let n = w.blockCount(); n > 0; n = w.blockCount()) {
    for (let i = 0; i < n; i++) {
      const nameStart = w.span();
      const nameEnd = w.pos;
      const start = w.pos;
      w.value(0);
      const k = keys.findIndex((e) => sameName(buf, e, nameStart, nameEnd, asciiNames));
      if (k !== -1) found[k] = { start, end: w.pos };
    }
  }
  keys.forEach((key, k) => {
    const old = found[k];
    // Same bytes ⇒ same value. Different bytes of an equal value would need a non-canonical
    // encoding, which value() already refused, or invalid UTF-8: then the general path decides.
    if (!old || buf.compare(buf, key.start, key.end, old.start, old.end) !== 0) throw BAIL;
  });
  const sequenceNumber = w.string();
  if (!SEQUENCE_NUMBER.test(sequenceNumber)) throw BAIL;
  if (w.long() <= 0) throw BAIL; // SizeBytes
  const viewStart = w.span();
  const view = buf.subarray(viewStart, w.pos);
  if (!view.equals(VIEW_NEW_AND_OLD) && !view.equals(VIEW_OLD)) throw BAIL;
  const arn = STREAM_ARN_PATTERN.exec(w.string());
  if (!arn || arn[1] !== awsRegion || arn[3] === undefined) throw BAIL;
  if (!w.equals(SERVICE) || !w.equals(PRINCIPAL)) throw BAIL;
  if (w.pos !== buf.length) throw BAIL; // trailing bytes
  return {
    eventID,
    table: arn[3],
    keys: Object.fromEntries(keys.map((k) => [k.name, k.value])),
    approximateCreationDateTime,
    sequenceNumber,
  };
}
