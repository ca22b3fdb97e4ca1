import { MAX_NESTING } from './attribute-value';
import { ATTRIBUTE_FIELD, ATTRIBUTE_FIELDS, AvroReader, BAIL, READ_FINGERPRINTS } from './avro-reader';
import { STREAM_ARN_PATTERN } from './record';

/**
 * The contract check of a stream-record v1 message done on its Avro bytes, without decoding it
 * into objects (most of the archiver's per-record cost was building and then discarding them).
 * Like checkCurrentAvro it only says "valid" or "cannot vouch" (throws Bail): whenever it is
 * unsure (a non-canonical encoding, a duplicate map key, an out-of-range long) the caller goes
 * the general way. It is written for exactly one schema, identified by its fingerprint below;
 * a new schema version is simply not walked.
 */
export const WALKED_STREAM_RECORD_FINGERPRINT = READ_FINGERPRINTS.streamRecord;

export type KeyValue = { S: string } | { N: string } | { B: Uint8Array };

export interface WalkedRemove {
  eventID: string;
  table: string;
  keys: Record<string, KeyValue>;
  approximateCreationDateTime: number;
  sequenceNumber: string;
}

const REGION = /^[a-z0-9-]+$/;
/** The bytes of an ASCII string, to compare with the bytes of a message without decoding them. */
export const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
const REMOVE = ascii('REMOVE');
const VERSION = ascii('1.1');
const SOURCE = ascii('aws:dynamodb');
const SERVICE = ascii('Service');
const PRINCIPAL = ascii('dynamodb.amazonaws.com');
const VIEW_NEW_AND_OLD = ascii('NEW_AND_OLD_IMAGES');
const VIEW_OLD = ascii('OLD_IMAGE');

const { S, N, B, SS, NS, BS, M, L, NULL, BOOL } = ATTRIBUTE_FIELD;

/**
 * avsc refuses a long beyond ±(2^53 − 2) ("potential precision loss"), so the general path rejects a message that
 * holds one: the walk, which reads every safe integer, refuses it too (it may only be stricter).
 */
const AVSC_MAX_LONG = Number.MAX_SAFE_INTEGER - 1;

/** buf[aStart, aStart + len) equals other[bStart, bStart + len); a byte loop (values here are short). */
function sameBytes(buf: Buffer, aStart: number, other: Buffer, bStart: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (buf[aStart + i] !== other[bStart + i]) return false;
  return true;
}

const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;

/**
 * NUMBER_PATTERN on the UTF-8 bytes [start, end), without decoding: the pattern is ASCII only, so a
 * byte ≥ 0x80 (a non-ASCII or invalid character once decoded) never matches, and ASCII bytes decode
 * one to one. The unit tests compare it with the pattern.
 */
export function isNumberBytes(buf: Buffer, start: number, end: number): boolean {
  let i = start;
  if (i < end && (buf[i] === 0x2b || buf[i] === 0x2d)) i++; // + -
  let intDigits = 0;
  while (i < end && isDigit(buf[i])) {
    i++;
    intDigits++;
  }
  if (i < end && buf[i] === 0x2e) {
    // .
    i++;
    let fracDigits = 0;
    while (i < end && isDigit(buf[i])) {
      i++;
      fracDigits++;
    }
    if (intDigits === 0 && fracDigits === 0) return false;
  } else if (intDigits === 0) return false;
  if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
    // e E
    i++;
    if (i < end && (buf[i] === 0x2b || buf[i] === 0x2d)) i++;
    let expDigits = 0;
    while (i < end && isDigit(buf[i])) {
      i++;
      expDigits++;
    }
    if (expDigits === 0) return false;
  }
  return i === end;
}

/** buf[start, pos) of the next string equals `expected`. */
function equals(w: AvroReader, expected: Buffer): boolean {
  const start = w.span();
  return w.pos - start === expected.length && sameBytes(w.buf, start, expected, 0, expected.length);
}

/**
 * Union index of a ["null", T] field in its one canonical byte: false for null, true for T. Other encodings of the
 * same index are refused: the walk compares values by their bytes, which holds only for canonical ones.
 */
function present(w: AvroReader): boolean {
  const b = w.byte();
  if (b === 0) return false;
  if (b === 2) return true;
  throw BAIL;
}

function number(w: AvroReader): void {
  const start = w.span();
  if (!isNumberBytes(w.buf, start, w.pos)) throw BAIL;
}

/** A set's items (SS, NS, BS): at least one, each valid. */
function set(w: AvroReader, field: number): void {
  let total = 0;
  for (let n = w.blockCount(); n > 0; n = w.blockCount()) {
    total += n;
    for (let i = 0; i < n; i++) {
      if (field === NS) number(w);
      else w.span();
    }
  }
  if (total === 0) throw BAIL;
}

/** The one present member of an AttributeValue at `depth` (as parseValue), with valid content. */
function checkedMember(w: AvroReader, field: number, depth: number): void {
  switch (field) {
    case S:
    case B:
      w.span();
      break;
    case N:
      number(w);
      break;
    case SS:
    case BS:
    case NS:
      set(w, field);
      break;
    case M:
      if (depth >= MAX_NESTING) throw BAIL;
      map(w, depth + 1);
      break;
    case L:
      if (depth >= MAX_NESTING) throw BAIL;
      for (let n = w.blockCount(); n > 0; n = w.blockCount())
        for (let i = 0; i < n; i++) attributeValue(w, depth + 1);
      break;
    case NULL:
      // avsc reads any non-zero byte as true; only the canonical 1 is vouched for.
      if (w.byte() !== 1) throw BAIL;
      break;
    case BOOL: {
      const b = w.byte();
      if (b !== 0 && b !== 1) throw BAIL;
      break;
    }
  }
}

/** One AttributeValue at `depth` (as parseValue): exactly one field set, with valid content. Returns its index. */
function attributeValue(w: AvroReader, depth: number): number {
  let tag = -1;
  for (let field = 0; field < ATTRIBUTE_FIELDS; field++) {
    if (!present(w)) continue;
    if (tag !== -1) throw BAIL;
    tag = field;
    checkedMember(w, field, depth);
  }
  if (tag === -1) throw BAIL;
  return tag;
}

/** A map of AttributeValues whose names are not needed (nested M). */
function map(w: AvroReader, depth: number): void {
  for (let n = w.blockCount(); n > 0; n = w.blockCount()) {
    for (let i = 0; i < n; i++) {
      w.span();
      attributeValue(w, depth);
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

function readKeys(w: AvroReader): KeyEntry[] {
  const keys: KeyEntry[] = [];
  for (let n = w.blockCount(); n > 0; n = w.blockCount()) {
    for (let i = 0; i < n; i++) {
      const nameStart = w.span();
      const nameEnd = w.pos;
      const name = w.buf.toString('utf8', nameStart, nameEnd);
      if (name.length === 0 || keys.length >= 2 || (keys.length === 1 && keys[0]?.name === name)) throw BAIL;
      const start = w.pos;
      const tag = attributeValue(w, 0);
      const end = w.pos;
      // The value's one present field is its last string/bytes: [start + tag unions .. end).
      if (tag !== S && tag !== N && tag !== B) throw BAIL;
      w.pos = start + tag + 1;
      const s = w.span();
      const e = w.pos;
      w.pos = end;
      let value: KeyValue;
      if (tag === S) value = { S: w.buf.toString('utf8', s, e) };
      else if (tag === N) value = { N: w.buf.toString('utf8', s, e) };
      else value = { B: w.buf.subarray(s, e) };
      keys.push({ name, nameStart, nameEnd, value, start, end });
    }
  }
  if (keys.length === 0) throw BAIL;
  return keys;
}

/**
 * A string field judged once per distinct spelling: the stream's region and ARN are the same in every record of a
 * table, so their checks (regular expressions on decoded strings) ran once per record for the same bytes. The
 * last few distinct values are kept (a topic interleaves several tables), each as a copy of its bytes (the
 * message's buffer is the fetch's) with its verdict.
 */
class RecentlySeen<T> {
  private readonly seen: Array<{ bytes: Buffer; verdict: T }> = [];

  constructor(private readonly judge: (value: string) => T | null) {}

  /** The verdict for buf[start, end): a remembered one for the same bytes, else the judge's. */
  of(buf: Buffer, start: number, end: number): T | null {
    const len = end - start;
    for (const e of this.seen)
      if (e.bytes.length === len && sameBytes(buf, start, e.bytes, 0, len)) return e.verdict;
    const verdict = this.judge(buf.toString('utf8', start, end));
    if (verdict !== null) {
      if (this.seen.length >= RECENTLY_SEEN) this.seen.pop();
      this.seen.unshift({ bytes: Buffer.from(buf.subarray(start, end)), verdict });
    }
    return verdict;
  }
}
/** Distinct values remembered per field: a topic's tables (or regions) beyond that are judged every time. */
const RECENTLY_SEEN = 16;

const REGIONS = new RecentlySeen((region) => (REGION.test(region) ? region : null));
const ARNS = new RecentlySeen((arn) => {
  const m = STREAM_ARN_PATTERN.exec(arn);
  return m?.[1] !== undefined && m[3] !== undefined ? { region: m[1], table: m[3] } : null;
});

/** A SequenceNumber: 21 to 40 ASCII digits, checked on the bytes (decoded only once valid). */
function isSequenceNumberBytes(buf: Buffer, start: number, end: number): boolean {
  if (end - start < 21 || end - start > 40) return false;
  for (let i = start; i < end; i++) if (!isDigit(buf[i])) return false;
  return true;
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
      end - start === key.nameEnd - key.nameStart && sameBytes(buf, key.nameStart, buf, start, end - start)
    );
  return buf.toString('utf8', start, end) === key.name;
}

/** The key's bytes equal the OldImage value at [start, end) (start -1: the image lacks the key). */
function sameValue(buf: Buffer, key: KeyEntry, start: number, end: number): boolean {
  return (
    start !== -1 && end - start === key.end - key.start && sameBytes(buf, key.start, buf, start, end - start)
  );
}

/** Walk a stream-record v1 message; throws Bail when it cannot vouch for it. */
export function walkRemove(buf: Buffer): WalkedRemove {
  const w = new AvroReader(buf);
  const eventID = w.string();
  if (eventID.length < 1 || eventID.length > 128) throw BAIL;
  if (!equals(w, REMOVE) || !equals(w, VERSION) || !equals(w, SOURCE)) throw BAIL;
  const regionStart = w.span();
  const awsRegion = REGIONS.of(buf, regionStart, w.pos);
  if (awsRegion === null) throw BAIL;
  // dynamodb
  const approximateCreationDateTime = w.long();
  if (approximateCreationDateTime < 0 || approximateCreationDateTime > AVSC_MAX_LONG) throw BAIL;
  const keys = readKeys(w);
  // OldImage: every value valid; for key names, the last entry of that name (avsc keeps the last).
  // ASCII key names can only be spelled one way; otherwise names are compared as avsc reads them.
  const key0 = keys[0] as KeyEntry;
  const key1 = keys[1];
  const asciiNames =
    isAscii(buf, key0.nameStart, key0.nameEnd) && (!key1 || isAscii(buf, key1.nameStart, key1.nameEnd));
  // Where the OldImage value of key 0 / key 1 starts and ends (-1: not seen).
  let found0 = -1;
  let found0End = -1;
  let found1 = -1;
  let found1End = -1;
  for (let n = w.blockCount(); n > 0; n = w.blockCount()) {
    for (let i = 0; i < n; i++) {
      const nameStart = w.span();
      const nameEnd = w.pos;
      const start = w.pos;
      attributeValue(w, 0);
      if (sameName(buf, key0, nameStart, nameEnd, asciiNames)) {
        found0 = start;
        found0End = w.pos;
      } else if (key1 && sameName(buf, key1, nameStart, nameEnd, asciiNames)) {
        found1 = start;
        found1End = w.pos;
      }
    }
  }
  // Same bytes ⇒ same value. Different bytes of an equal value would need a non-canonical
  // encoding, which value() already refused, or invalid UTF-8: then the general path decides.
  if (!sameValue(buf, key0, found0, found0End) || (key1 && !sameValue(buf, key1, found1, found1End)))
    throw BAIL;
  const sequenceStart = w.span();
  if (!isSequenceNumberBytes(buf, sequenceStart, w.pos)) throw BAIL;
  const sequenceNumber = buf.toString('latin1', sequenceStart, w.pos);
  const sizeBytes = w.long();
  if (sizeBytes <= 0 || sizeBytes > AVSC_MAX_LONG) throw BAIL;
  const viewStart = w.span();
  const viewLength = w.pos - viewStart;
  if (
    !(viewLength === VIEW_NEW_AND_OLD.length && sameBytes(buf, viewStart, VIEW_NEW_AND_OLD, 0, viewLength)) &&
    !(viewLength === VIEW_OLD.length && sameBytes(buf, viewStart, VIEW_OLD, 0, viewLength))
  )
    throw BAIL;
  const arnStart = w.span();
  const arn = ARNS.of(buf, arnStart, w.pos);
  if (arn === null || arn.region !== awsRegion) throw BAIL;
  if (!equals(w, SERVICE) || !equals(w, PRINCIPAL)) throw BAIL;
  if (w.pos !== buf.length) throw BAIL; // trailing bytes
  return {
    eventID,
    table: arn.table,
    keys: key1 ? { [key0.name]: key0.value, [key1.name]: key1.value } : { [key0.name]: key0.value },
    approximateCreationDateTime,
    sequenceNumber,
  };
}
