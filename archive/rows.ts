import avro, { type Type } from 'avsc';
import {
  SCHEMA_FINGERPRINTS,
  archivedPrefix,
  archivedRecordType,
  canonicalJson,
  fingerprintOf,
  toAvroArchived,
  type ArchivedPrefix,
  type ArchivedRecord,
  type CheckedAvroMessage,
  type KafkaCoordinates,
} from '../schemas';
import type { KeyIndexRow } from './storage/layout';
import { InternalError } from '../core/errors';

/**
 * An archive row: its Avro bytes, made once when its message arrives (or spliced from the message's own bytes), and
 * what the layout, the de-duplication and the key index need of it. Pure: no I/O.
 */

/** When the deletion happened: REMOVE → ApproximateCreationDateTime (seconds), retraction → retractedAt (ms). */
export function deletedAtMs(row: ArchivedRecord): number {
  if (row.kind === 'remove' && row.record) return row.record.dynamodb.ApproximateCreationDateTime * 1000;
  if (row.kind === 'retract' && row.retraction) return row.retraction.retractedAt;
  throw new InternalError(`archive row of kind ${row.kind} without its body`);
}

/** The identity used for de-duplication: a REMOVE's eventID, or the eventID a retraction retracts. */
export function dedupKeyOf(kind: 'remove' | 'retract', eventID: string): string {
  return `${kind === 'remove' ? 'r' : 'x'}:${eventID}`;
}

/**
 * A row ready for the archive, kept instead of the decoded record while it waits in a buffer:
 * the Avro bytes (encoded once, when the message arrives, so a row that cannot be written is
 * dead-lettered at once instead of failing a whole roll later) and what the layout and key index
 * need. About the size of the message, where a decoded record is several times larger.
 */
export interface PreparedRow {
  offset: bigint;
  table: string;
  deletedAtMs: number;
  dedupKey: string;
  avro: RowBytes;
  index: Omit<KeyIndexRow, 'row'>;
}

/**
 * A row's Avro bytes: encoded, or (the common case) its encoded prefix fields and the message body
 * it copies, written straight into the container block by writeRowBytes, so that no buffer per
 * row is allocated and then copied again (measured: the per-row buffers were most of the
 * archiver's allocations, and their pool slabs drove the garbage collector).
 */
export type RowBytes = Buffer | SplicedRow;
export interface SplicedRow {
  prefix: ArchivedPrefix;
  /** The message's Avro value, as it came from Kafka (a view of the fetch buffer: copied, never kept). */
  body: Buffer;
}

/**
 * The archive row is the message's Kafka coordinates followed by the message body in a union. When
 * the message is Avro of exactly the body schema the row embeds (the common case: the current
 * writer schema), its bytes are copied into the row instead of being re-encoded from the decoded
 * record: same row, and the most expensive step of archiving gone. The body was still decoded and
 * validated in full (decodeMessage) before it gets here.
 */
const PREFIX_FIELDS = ['topic', 'partition', 'offset', 'kafkaTimestamp', 'kind', 'table', 'eventID'];
interface SpliceLayout {
  prefix: Type;
  removeFingerprint: string;
  retractFingerprint: string;
}
function spliceLayout(): SpliceLayout | null {
  const fields =
    (archivedRecordType as unknown as { fields?: Array<{ name: string; type: Type }> }).fields ?? [];
  const names = fields.map((f) => f.name);
  if (names.join() !== [...PREFIX_FIELDS, 'record', 'retraction'].join()) return null;
  const body = (i: number): Type | undefined => {
    const types = (fields[i]?.type as unknown as { types?: Type[] }).types;
    return types?.length === 2 && types[0]?.typeName === 'null' ? types[1] : undefined;
  };
  const record = body(7);
  const retraction = body(8);
  if (!record || !retraction) return null;
  const removeFingerprint = fingerprintOf(record);
  const retractFingerprint = fingerprintOf(retraction);
  // Only when the embedded bodies are exactly the current message schemas.
  if (
    removeFingerprint !== SCHEMA_FINGERPRINTS.streamRecord ||
    retractFingerprint !== SCHEMA_FINGERPRINTS.retraction
  )
    return null;
  const prefix = avro.Type.forSchema({
    type: 'record',
    name: 'ArchivedRecordPrefix',
    fields: fields.slice(0, PREFIX_FIELDS.length).map((f) => ({ name: f.name, type: f.type.schema() })),
  });
  return { prefix, removeFingerprint, retractFingerprint };
}
const SPLICE = spliceLayout();

/** The message as it came from Kafka, when it was Avro: lets prepareRow copy its bytes. */
export interface WireBody {
  value: Buffer;
  /** The writer schema fingerprint from the message headers. */
  fingerprint: string;
}

/** At most this many bytes for the row: UTF-8 takes ≤ 3 bytes per UTF-16 unit; 64 covers the varints. */
function splicedRoom(row: SplicedRow): number {
  const p = row.prefix;
  return (
    64 +
    3 * (p.topic.length + p.offset.length + p.kind.length + p.table.length + p.eventID.length) +
    row.body.length +
    2
  );
}

/**
 * Write the row's Avro bytes into `buf` at `pos`; returns the end, or -1 when fewer than
 * rowBytesRoom(bytes) bytes are left (nothing written then).
 */
export function writeRowBytes(buf: Buffer, pos: number, bytes: RowBytes): number {
  if (Buffer.isBuffer(bytes)) {
    if (buf.length - pos < bytes.length) return -1;
    return pos + bytes.copy(buf, pos);
  }
  if (!SPLICE) throw new InternalError('a spliced row without a splice layout');
  if (buf.length - pos < splicedRoom(bytes)) return -1;
  const { prefix, body } = bytes;
  let at = SPLICE.prefix.encode(prefix, buf, pos);
  if (at < 0) throw new InternalError('archive row prefix larger than its bound'); // cannot happen: splicedRoom
  if (prefix.kind === 'remove') {
    buf[at++] = 2; // record: branch 1
    at += body.copy(buf, at);
    buf[at++] = 0; // retraction: null
  } else {
    buf[at++] = 0;
    buf[at++] = 2;
    at += body.copy(buf, at);
  }
  return at;
}

/** Room writeRowBytes needs for the row (exact for an encoded row, a bound for a spliced one). */
export function rowBytesRoom(bytes: RowBytes): number {
  return Buffer.isBuffer(bytes) ? bytes.length : splicedRoom(bytes);
}

/** The row's Avro bytes as one buffer (the reference encodeRoll and the tests). */
export function rowBuffer(bytes: RowBytes): Buffer {
  if (Buffer.isBuffer(bytes)) return bytes;
  const out = Buffer.allocUnsafe(splicedRoom(bytes));
  return out.subarray(0, writeRowBytes(out, 0, bytes));
}

function encodeRow(row: ArchivedRecord, wire: WireBody | undefined): RowBytes {
  if (SPLICE && wire) {
    const isRemove = row.kind === 'remove';
    if (wire.fingerprint === (isRemove ? SPLICE.removeFingerprint : SPLICE.retractFingerprint))
      // The prefix alone, copied: the spliced row waits in its roll until the file is written, and holding the
      // decoded row instead would keep its whole record (OldImage included) alive next to the wire bytes.
      return { prefix: archivedPrefix(row), body: wire.value };
  }
  return archivedRecordType.toBuffer(toAvroArchived(row));
}

/** True when rows of current-schema Avro messages are built by copying their bytes. */
export const SPLICING = SPLICE !== null;

/**
 * Encode and index one archive row; throws when the row cannot be represented in the archive.
 * `wire`: the original Avro message, when there was one (see encodeRow).
 */
export function prepareRow(row: ArchivedRecord, wire?: WireBody): PreparedRow {
  const keys = row.kind === 'remove' ? row.record?.dynamodb.Keys : row.retraction?.Keys;
  if (!keys) throw new InternalError(`archive row of kind ${row.kind} without its body`);
  const at = deletedAtMs(row);
  return {
    offset: BigInt(row.offset),
    table: row.table,
    deletedAtMs: at,
    dedupKey: dedupKeyOf(row.kind, row.eventID),
    avro: encodeRow(row, wire),
    index: {
      key: canonicalJson(keys),
      eventID: row.eventID,
      kind: row.kind,
      ...(row.kind === 'retract' ? { retractsEventID: row.eventID } : {}),
      deletedAtMs: at,
      sequenceNumber: row.record?.dynamodb.SequenceNumber ?? '',
    },
  };
}

/** canonicalJson of S/N/B key attributes, written directly (the unit tests compare the two). */
function keyJson(keys: CheckedAvroMessage['keys']): string {
  const names = Object.keys(keys);
  // A key has one or two attributes: order them as sort() would (UTF-16 code units) without
  // sort(), which allocated ~800 bytes per call (measured: a tenth of the archiver's garbage).
  if (names.length === 2) {
    const [a, b] = names as [string, string];
    if (b < a) {
      names[0] = b;
      names[1] = a;
    }
  } else if (names.length > 2) names.sort();
  let out = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const v = keys[name] as CheckedAvroMessage['keys'][string];
    const body =
      'S' in v
        ? `{"S":${JSON.stringify(v.S)}}`
        : 'N' in v
          ? `{"N":${JSON.stringify(v.N)}}`
          : `{"B":"${Buffer.from(v.B.buffer, v.B.byteOffset, v.B.length).toString('base64')}"}`;
    out += `${i > 0 ? ',' : ''}${JSON.stringify(name)}:${body}`;
  }
  return `${out}}`;
}

/**
 * The same row as `prepareRow(toArchived(decodeMessage(value, headers), at), wire)`, for a message
 * checkCurrentAvro accepted: built from the few fields the row needs, the body copied as is.
 * Returns null when rows are not spliced (the embedded body schemas differ from the current
 * message schemas); the caller then takes the general path.
 */
export function prepareCheckedRow(
  checked: CheckedAvroMessage,
  at: KafkaCoordinates,
  value: Buffer,
): PreparedRow | null {
  if (!SPLICE) return null;
  const expected = checked.kind === 'remove' ? SPLICE.removeFingerprint : SPLICE.retractFingerprint;
  if (checked.fingerprint !== expected) return null;
  const prefix: ArchivedPrefix = {
    topic: at.topic,
    partition: at.partition,
    offset: at.offset,
    kafkaTimestamp: Number(at.timestamp),
    kind: checked.kind,
    table: checked.table,
    eventID: checked.eventID,
  };
  return {
    offset: BigInt(at.offset),
    table: checked.table,
    deletedAtMs: checked.deletedAtMs,
    dedupKey: dedupKeyOf(checked.kind, checked.eventID),
    avro: { prefix, body: value },
    index: {
      key: keyJson(checked.keys),
      eventID: checked.eventID,
      kind: checked.kind,
      ...(checked.kind === 'retract' ? { retractsEventID: checked.eventID } : {}),
      deletedAtMs: checked.deletedAtMs,
      sequenceNumber: checked.sequenceNumber,
    },
  };
}
