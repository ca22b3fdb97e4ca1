import type { z } from 'zod';
import { schemaRegistry, type SchemaName } from './avro-registry';
import {
  fromAvroRetraction,
  fromAvroStreamRecord,
  toAvroRetraction,
  toAvroStreamRecord,
  type AvroRetraction,
  type AvroStreamRecord,
} from './avro-shape';
import { PoisonRecordError } from './errors';
import { ENCODINGS, HEADERS, KINDS, type Encoding, type MessageHeaders, type RecordKind } from './headers';
import { toLambdaJson, toRetractionJson } from './json-shape';
import { avroBodyOf, frameConfluent } from './wire';
import { RetractionSchema, StreamRecordSchema, tableOf, type Retraction, type StreamRecord } from './record';

export type Decoded = { kind: 'remove'; record: StreamRecord } | { kind: 'retract'; retraction: Retraction };

export interface EncodedMessage {
  /** The producer sets the key itself: messageKey(table, Keys). */
  key?: never;
  value: Buffer;
  headers: Record<string, string>;
}

const SCHEMA_OF: Record<RecordKind, SchemaName> = { remove: 'stream-record', retract: 'retraction' };

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  let result: ReturnType<S['safeParse']>;
  try {
    result = schema.safeParse(value) as ReturnType<S['safeParse']>;
  } catch (err) {
    // e.g. a stack overflow on absurdly deep nesting: still poison, never a crash of the caller
    throw new PoisonRecordError('schema-violation', `${what}: ${(err as Error).message}`, { cause: err });
  }
  if (!result.success)
    throw new PoisonRecordError('schema-violation', `${what}: ${describeIssues(result.error)}`);
  return result.data as z.output<S>;
}

/** Validate a REMOVE record and encode it. Throws PoisonRecordError('schema-violation') on a bad record. */
export function encodeRemove(record: StreamRecord, encoding: Encoding): EncodedMessage {
  const valid = validate(StreamRecordSchema, record, 'REMOVE record');
  const headers: Record<string, string> = {
    [HEADERS.table]: tableOf(valid),
    [HEADERS.kind]: 'remove',
    [HEADERS.encoding]: encoding,
    [HEADERS.eventId]: valid.eventID,
  };
  if (encoding === 'avro') {
    const writer = schemaRegistry().latest('stream-record');
    headers[HEADERS.fingerprint] = writer.fingerprint;
    return { value: writer.type.toBuffer(toAvroStreamRecord(valid)), headers };
  }
  if (encoding === 'json')
    return { value: Buffer.from(JSON.stringify(toLambdaJson(valid)), 'utf8'), headers };
  throw new PoisonRecordError('unknown-encoding', `cannot encode as ${String(encoding)}`);
}

/** Validate a retraction and encode it. Throws PoisonRecordError('schema-violation') on a bad one. */
export function encodeRetraction(retraction: Retraction, encoding: Encoding): EncodedMessage {
  const valid = validate(RetractionSchema, retraction, 'retraction');
  const headers: Record<string, string> = {
    [HEADERS.table]: valid.table,
    [HEADERS.kind]: 'retract',
    [HEADERS.encoding]: encoding,
    [HEADERS.eventId]: valid.retractsEventID,
  };
  if (encoding === 'avro') {
    const writer = schemaRegistry().latest('retraction');
    headers[HEADERS.fingerprint] = writer.fingerprint;
    return { value: writer.type.toBuffer(toAvroRetraction(valid)), headers };
  }
  if (encoding === 'json')
    return { value: Buffer.from(JSON.stringify(toRetractionJson(valid)), 'utf8'), headers };
  throw new PoisonRecordError('unknown-encoding', `cannot encode as ${String(encoding)}`);
}

/**
 * The same message in the Confluent wire format: the Avro body behind magic byte 0 and `schemaId`, which the
 * `ttlstream-schema-id` header repeats. The fingerprint header stays, so ttlstream's readers need no registry.
 */
export function inConfluentFormat(message: EncodedMessage, schemaId: number): EncodedMessage {
  if (message.headers[HEADERS.encoding] !== 'avro')
    throw new PoisonRecordError('unknown-encoding', 'only Avro records have a Confluent wire format');
  return {
    value: frameConfluent(schemaId, message.value),
    headers: { ...message.headers, [HEADERS.schemaId]: String(schemaId) },
  };
}

/** One header as a string; undefined when absent. A header repeated with different values is poison. */
export function headerString(headers: MessageHeaders | undefined, name: string): string | undefined {
  const raw = headers?.[name];
  if (raw === undefined || raw === null) return undefined;
  const values = (Array.isArray(raw) ? raw : [raw]).map((v) =>
    typeof v === 'string' ? v : v.toString('utf8'),
  );
  if (values.length === 0) return undefined;
  const first = values[0] as string;
  if (values.some((v) => v !== first)) {
    throw new PoisonRecordError(
      'missing-headers',
      `header ${name} given ${values.length} times with different values`,
    );
  }
  return first;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decode and validate one stream message. Never throws anything but PoisonRecordError, whatever
 * the bytes. Avro values are read with the writer schema named by the fingerprint header and
 * resolved to the current reader schema, so records written by an older version still decode.
 */
export function decodeMessage(value: Buffer | null | undefined, headers: MessageHeaders): Decoded {
  const kindHeader = headerString(headers, HEADERS.kind);
  const encodingHeader = headerString(headers, HEADERS.encoding);
  if (kindHeader === undefined || encodingHeader === undefined) {
    throw new PoisonRecordError(
      'missing-headers',
      `expected headers ${HEADERS.kind} and ${HEADERS.encoding}`,
    );
  }
  if (!(ENCODINGS as readonly string[]).includes(encodingHeader)) {
    throw new PoisonRecordError(
      'unknown-encoding',
      `encoding ${JSON.stringify(encodingHeader)} is not avro or json`,
    );
  }
  if (!(KINDS as readonly string[]).includes(kindHeader)) {
    throw new PoisonRecordError(
      'unknown-schema',
      `kind ${JSON.stringify(kindHeader)} is not remove or retract`,
    );
  }
  const kind = kindHeader as RecordKind;
  const encoding = encodingHeader as Encoding;
  let fingerprint: string | undefined;
  if (encoding === 'avro') {
    fingerprint = headerString(headers, HEADERS.fingerprint);
    if (fingerprint === undefined)
      throw new PoisonRecordError('missing-headers', `Avro message without ${HEADERS.fingerprint}`);
  }
  if (value === null || value === undefined || value.length === 0) {
    throw new PoisonRecordError('undecodable', 'empty message value (tombstone?)');
  }

  const raw =
    encoding === 'avro'
      ? decodeAvro(kind, fingerprint as string, avroBodyOf(value, headers))
      : decodeJson(value);
  const decoded: Decoded =
    kind === 'remove'
      ? { kind, record: validate(StreamRecordSchema, raw, 'REMOVE record') }
      : { kind, retraction: validate(RetractionSchema, raw, 'retraction') };
  checkHeadersAgree(decoded, headers);
  return decoded;
}

function decodeAvro(kind: RecordKind, fingerprint: string, value: Buffer): unknown {
  const registry = schemaRegistry();
  const writer = registry.find(fingerprint);
  if (!writer || writer.name !== SCHEMA_OF[kind]) {
    const known = writer ? `a ${writer.name} schema, not ${SCHEMA_OF[kind]}` : 'no known schema';
    throw new PoisonRecordError('unknown-schema', `fingerprint ${fingerprint} is ${known}`);
  }
  let avro: unknown;
  try {
    avro = registry.decode(writer, value);
  } catch (err) {
    throw new PoisonRecordError(
      'undecodable',
      `not Avro of ${writer.name} v${writer.version}: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  try {
    return kind === 'remove'
      ? fromAvroStreamRecord(avro as AvroStreamRecord)
      : fromAvroRetraction(avro as AvroRetraction);
  } catch (err) {
    throw new PoisonRecordError('schema-violation', (err as Error).message, { cause: err });
  }
}

function decodeJson(value: Buffer): unknown {
  try {
    return JSON.parse(utf8.decode(value));
  } catch (err) {
    throw new PoisonRecordError('undecodable', `not UTF-8 JSON: ${(err as Error).message}`, { cause: err });
  }
}

function checkHeadersAgree(decoded: Decoded, headers: MessageHeaders): void {
  const table = decoded.kind === 'remove' ? tableOf(decoded.record) : decoded.retraction.table;
  const eventId = decoded.kind === 'remove' ? decoded.record.eventID : decoded.retraction.retractsEventID;
  const tableHeader = headerString(headers, HEADERS.table);
  if (tableHeader !== undefined && tableHeader !== table) {
    throw new PoisonRecordError(
      'schema-violation',
      `header ${HEADERS.table}=${tableHeader} but the body says ${table}`,
    );
  }
  const idHeader = headerString(headers, HEADERS.eventId);
  if (idHeader !== undefined && idHeader !== eventId) {
    throw new PoisonRecordError(
      'schema-violation',
      `header ${HEADERS.eventId}=${idHeader} but the body says ${eventId}`,
    );
  }
}
