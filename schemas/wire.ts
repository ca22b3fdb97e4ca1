import { PoisonRecordError } from './errors';
import { HEADERS, type MessageHeaders } from './headers';

/**
 * The Confluent wire format: magic byte 0, the schema's registry id as a 4-byte big-endian integer, then the Avro
 * body. What Kafka Connect's AvroConverter, ksqlDB, Flink and the Confluent deserializers expect (decision 0025).
 */
export const CONFLUENT_MAGIC = 0;
export const CONFLUENT_PREFIX_BYTES = 5;
const MAX_SCHEMA_ID = 0x7fffffff;

export function frameConfluent(schemaId: number, avroBody: Buffer): Buffer {
  if (!Number.isInteger(schemaId) || schemaId < 0 || schemaId > MAX_SCHEMA_ID)
    throw new RangeError(`schema id ${schemaId} does not fit the Confluent wire format`);
  const out = Buffer.allocUnsafe(CONFLUENT_PREFIX_BYTES + avroBody.length);
  out.writeUInt8(CONFLUENT_MAGIC, 0);
  out.writeUInt32BE(schemaId, 1);
  avroBody.copy(out, CONFLUENT_PREFIX_BYTES);
  return out;
}

/** The raw header value of one header, or undefined; a repeated header is left to the decoder's checks. */
function single(headers: MessageHeaders, name: string): string | undefined {
  const raw = headers[name];
  if (raw === undefined || raw === null || Array.isArray(raw)) return undefined;
  return typeof raw === 'string' ? raw : raw.toString('latin1');
}

/**
 * The Avro body of a stream message. A message in the Confluent wire format says so with the
 * `ttlstream-schema-id` header (ttlstream's readers never guess from the bytes: an Avro body may itself begin with 0);
 * its prefix must agree with the header. Any other message is returned as it is.
 */
export function avroBodyOf<V extends Buffer | null | undefined>(
  value: V,
  headers: MessageHeaders,
): V | Buffer {
  if (headers[HEADERS.schemaId] === undefined) return value;
  const idHeader = single(headers, HEADERS.schemaId);
  if (idHeader === undefined || !/^\d{1,10}$/.test(idHeader))
    throw new PoisonRecordError('missing-headers', `header ${HEADERS.schemaId} is not one schema id`);
  if (!value || value.length < CONFLUENT_PREFIX_BYTES || value[0] !== CONFLUENT_MAGIC)
    throw new PoisonRecordError(
      'undecodable',
      `header ${HEADERS.schemaId} says Confluent wire format, but the value does not start with magic byte 0 and a schema id`,
    );
  const embedded = value.readUInt32BE(1);
  if (String(embedded) !== String(Number(idHeader)))
    throw new PoisonRecordError(
      'schema-violation',
      `header ${HEADERS.schemaId}=${idHeader} but the value carries schema id ${embedded}`,
    );
  return value.subarray(CONFLUENT_PREFIX_BYTES);
}
