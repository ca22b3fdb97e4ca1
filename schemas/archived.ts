import avsc from 'avsc';
import { z } from 'zod';
import { schemaRegistry } from './avro-registry';
import {
  fromAvroRetraction,
  fromAvroStreamRecord,
  toAvroRetraction,
  toAvroStreamRecord,
  type AvroRetraction,
  type AvroStreamRecord,
} from './avro-shape';
import type { Decoded } from './codec';
import { PoisonRecordError } from './errors';
import { RetractionSchema, StreamRecordSchema, tableOf } from './record';
import { TABLE_NAME_PATTERN } from './canonical';

/**
 * One archive row: a stream message plus its Kafka coordinates. Exactly one of `record` (kind
 * remove) and `retraction` (kind retract) is set; `eventID` is the record's id, or for a retraction
 * the id it retracts, so restore can drop retracted deletions with one lookup.
 */
export const ArchivedRecordSchema = z
  .object({
    topic: z.string().min(1),
    partition: z
      .number()
      .int()
      .nonnegative()
      .max(2 ** 31 - 1),
    /** int64 as a decimal string: kafkajs offsets are strings and may exceed 2^53. */
    offset: z.string().regex(/^\d{1,19}$/, 'offset is a non-negative decimal string'),
    kafkaTimestamp: z.number().int().nonnegative(),
    kind: z.enum(['remove', 'retract']),
    table: z.string().regex(TABLE_NAME_PATTERN),
    eventID: z.string().min(1),
    record: StreamRecordSchema.nullable(),
    retraction: RetractionSchema.nullable(),
  })
  .superRefine((row, ctx) => {
    const body = row.kind === 'remove' ? row.record : row.retraction;
    const other = row.kind === 'remove' ? row.retraction : row.record;
    if (body === null || other !== null) {
      ctx.addIssue({
        code: 'custom',
        message: `kind ${row.kind} needs exactly the ${row.kind === 'remove' ? 'record' : 'retraction'} field`,
      });
      return;
    }
    const table = row.record ? tableOf(row.record) : row.retraction?.table;
    const id = row.record ? row.record.eventID : row.retraction?.retractsEventID;
    if (table !== row.table)
      ctx.addIssue({ code: 'custom', message: 'table differs from the body', path: ['table'] });
    if (id !== row.eventID)
      ctx.addIssue({ code: 'custom', message: 'eventID differs from the body', path: ['eventID'] });
  });

export type ArchivedRecord = z.infer<typeof ArchivedRecordSchema>;

/** Where a message came from; `timestamp` as kafkajs gives it (a string of epoch ms) or a number. */
export interface KafkaCoordinates {
  topic: string;
  partition: number;
  offset: string;
  timestamp: string | number;
}

/** The archive row of a decoded message. */
export function toArchived(decoded: Decoded, at: KafkaCoordinates): ArchivedRecord {
  const common = {
    topic: at.topic,
    partition: at.partition,
    offset: at.offset,
    kafkaTimestamp: Number(at.timestamp),
  };
  return decoded.kind === 'remove'
    ? {
        ...common,
        kind: 'remove',
        table: tableOf(decoded.record),
        eventID: decoded.record.eventID,
        record: decoded.record,
        retraction: null,
      }
    : {
        ...common,
        kind: 'retract',
        table: decoded.retraction.table,
        eventID: decoded.retraction.retractsEventID,
        record: null,
        retraction: decoded.retraction,
      };
}

/** The Avro shape of an archive row, for `archivedRecordType.toBuffer` or an avsc BlockEncoder. */
export interface AvroArchivedRecord {
  topic: string;
  partition: number;
  offset: string;
  kafkaTimestamp: number;
  kind: string;
  table: string;
  eventID: string;
  record: AvroStreamRecord | null;
  retraction: AvroRetraction | null;
}

/** The fields of an archived row before its body, in schema order (the Avro, JSON and spliced forms share them). */
export type ArchivedPrefix = Pick<
  ArchivedRecord,
  'topic' | 'partition' | 'offset' | 'kafkaTimestamp' | 'kind' | 'table' | 'eventID'
>;

/**
 * The prefix fields alone, copied (not the row: its body may be large), of a validated row or of one as Avro
 * decodes it (whose `kind` is still any string).
 */
export function archivedPrefix<P extends Omit<ArchivedPrefix, 'kind'> & { kind: string }>(
  row: P,
): Pick<P, keyof ArchivedPrefix> {
  return {
    topic: row.topic,
    partition: row.partition,
    offset: row.offset,
    kafkaTimestamp: row.kafkaTimestamp,
    kind: row.kind,
    table: row.table,
    eventID: row.eventID,
  };
}

export function toAvroArchived(row: ArchivedRecord): AvroArchivedRecord {
  return {
    ...archivedPrefix(row),
    record: row.record ? toAvroStreamRecord(row.record) : null,
    retraction: row.retraction ? toAvroRetraction(row.retraction) : null,
  };
}

/**
 * An archive row read back (e.g. from createArchiveDecoder()) → validated SDK-shape row.
 * Throws PoisonRecordError('schema-violation') when the row breaks the contract.
 */
export function fromAvroArchived(row: AvroArchivedRecord): ArchivedRecord {
  let plain: unknown;
  try {
    plain = {
      ...archivedPrefix(row),
      record: row.record ? fromAvroStreamRecord(row.record) : null,
      retraction: row.retraction ? fromAvroRetraction(row.retraction) : null,
    };
  } catch (err) {
    throw new PoisonRecordError('schema-violation', `archive row: ${(err as Error).message}`, { cause: err });
  }
  return fromPlainArchived(plain);
}

/**
 * An archive row in the contract's plain shape (DynamoDB JSON with base64 binaries, as a Parquet
 * data file holds it) → validated SDK-shape row. Throws PoisonRecordError('schema-violation').
 */
export function fromPlainArchived(plain: unknown): ArchivedRecord {
  const result = ArchivedRecordSchema.safeParse(plain);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new PoisonRecordError(
      'schema-violation',
      `archive row: ${issue?.path.join('.')}: ${issue?.message}`,
    );
  }
  return result.data;
}

/**
 * A decoder for archive container files that reads any archived-record version into the current
 * one. Use it rather than avsc.createFileDecoder without options: it resolves old writer schemas,
 * and it keeps an attribute named "__proto__", which avsc's own map reader drops.
 */
export function createArchiveDecoder(): avsc.streams.BlockDecoder {
  return new avsc.streams.BlockDecoder({ readerSchema: schemaRegistry().latest('archived-record').type });
}

/** An encoder of archive container files (current archived-record schema, deflate). */
export function createArchiveEncoder(
  options: { codec?: 'null' | 'deflate'; blockSize?: number } = {},
): avsc.streams.BlockEncoder {
  return new avsc.streams.BlockEncoder(schemaRegistry().latest('archived-record').type, {
    codec: options.codec ?? 'deflate',
    ...(options.blockSize !== undefined ? { blockSize: options.blockSize } : {}),
  });
}
