import type { KafkaMessage } from 'kafkajs';
import {
  HEADERS,
  PoisonRecordError,
  avroBodyOf,
  checkCurrentAvro,
  decodeMessage,
  headerString,
  messageKeyDigest,
  toArchived,
  type MessageHeaders,
} from '../schemas';
import type { RecentIds } from './dedup';
import { isReplayed } from './dead-letter';
import { prepareCheckedRow, prepareRow, type PreparedRow } from '../archive/rows';

/**
 * What to do with one consumed message. Only `row` is archived; every other kind still counts as
 * processed (its offset is covered by the roll), except that `poison` first waits for its dead letter.
 * The caller (group/runner.ts) handles each kind in one exhaustive switch, so a new kind is a compile
 * error there until it is handled.
 */
export type Classification =
  | { kind: 'row'; row: PreparedRow }
  /** Header `ttlstream-replay: 1`: re-published from the archive, never archived again. */
  | { kind: 'replayed' }
  /** Its eventID (or retracted eventID) is in the partition's de-duplication window. */
  | { kind: 'duplicate'; dedupKey: string }
  /** Undecodable, or its row cannot be encoded: goes to the dead-letter topic. */
  | { kind: 'poison'; reason: string; err: unknown }
  /**
   * Its message key's digest is in the erasure ledger (as the partition worker last read it): a
   * record of an erased key still on Kafka, never archived. `table` is the key's table prefix.
   */
  | { kind: 'erased'; table: string };

const REPLAYED: Classification = { kind: 'replayed' };
const NONE_ERASED: ReadonlySet<string> = new Set();

/**
 * Classify a message of `topic`/`partition`. Synchronous and without I/O, so the common message costs
 * no await. A `row` answer has added its id to `dedup`, the partition's de-duplication window.
 */
function withoutSchemaId(headers: MessageHeaders): MessageHeaders {
  const { [HEADERS.schemaId]: _framed, ...rest } = headers;
  return rest;
}

const AVRO = Buffer.from('avro', 'latin1');

/**
 * The encoding header says Avro: the common header (one Buffer of these four bytes) compared without decoding it;
 * anything else as headerString reads it (which refuses one header given twice with different values).
 */
function isAvroEncoded(headers: MessageHeaders): boolean {
  const raw = headers[HEADERS.encoding];
  if (Buffer.isBuffer(raw) && raw.length === AVRO.length) return raw.equals(AVRO);
  return headerString(headers, HEADERS.encoding) === 'avro';
}

export function classifyMessage(
  topic: string,
  partition: number,
  message: KafkaMessage,
  dedup: RecentIds,
  erased: ReadonlySet<string> = NONE_ERASED,
): Classification {
  if (isReplayed(message.headers)) return REPLAYED;
  // The message key is `<table>/<canonical key>`, so its digest is the ledger's, found without decoding.
  // A snapshot may be a roll old: the worker checks each roll against a fresh read before writing it.
  if (erased.size > 0 && message.key && erased.has(messageKeyDigest(message.key)))
    return { kind: 'erased', table: message.key.toString('utf8').split('/', 1)[0] ?? '' };
  let row: PreparedRow;
  try {
    const headers = message.headers ?? {};
    const coordinates = { topic, partition, offset: message.offset, timestamp: message.timestamp };
    // Current-schema Avro (the common case) is checked on the Avro value and its bytes copied;
    // anything the fast check cannot vouch for takes the full path, which also names the error.
    // The archive holds the Avro body alone, whichever wire format the message came in.
    const avro = isAvroEncoded(headers);
    const body = avro ? avroBodyOf(message.value, headers) : message.value;
    const checked = checkCurrentAvro(body, body === message.value ? headers : withoutSchemaId(headers));
    const fast = checked && body ? prepareCheckedRow(checked, coordinates, body) : null;
    if (fast) row = fast;
    else {
      const decoded = decodeMessage(message.value, headers);
      const fingerprint = headerString(headers, HEADERS.fingerprint);
      // decodeMessage accepted these exact bytes as Avro of that schema: prepareRow may copy them.
      const wire = body && fingerprint !== undefined && avro ? { value: body, fingerprint } : undefined;
      row = prepareRow(toArchived(decoded, coordinates), wire);
    }
  } catch (err) {
    const reason = err instanceof PoisonRecordError ? err.reason : 'unarchivable';
    return { kind: 'poison', reason, err };
  }
  if (!dedup.add(row.dedupKey)) return { kind: 'duplicate', dedupKey: row.dedupKey };
  return { kind: 'row', row };
}
