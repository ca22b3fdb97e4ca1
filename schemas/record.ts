import { z } from 'zod';
import { AttributeMapSchema, KeySchema, attributeValuesEqual, type AttributeMap } from './attribute-value';
import { TABLE_NAME_PATTERN } from './canonical';
import { DataError } from '../core/errors';

/** The identity DynamoDB puts on TTL deletions; how consumers tell a TTL delete from a user delete. */
export const TTL_USER_IDENTITY = { type: 'Service', principalId: 'dynamodb.amazonaws.com' } as const;

/** The label ending the stream ARN of the records ttlstream's own deleter writes (a real stream's is its creation time). */
export const TTLSTREAM_STREAM_LABEL = 'ttlstream';

/** arn:aws:dynamodb:<region>:<account>:table/<table>/stream/<label> */
export const STREAM_ARN_PATTERN =
  /^arn:aws[a-z-]*:dynamodb:([a-z0-9-]+):(\d{12}):table\/([A-Za-z0-9_.-]{3,255})\/stream\/([^\s/]+)$/;

export function streamArn(region: string, account: string, table: string, label: string): string {
  return `arn:aws:dynamodb:${region}:${account}:table/${table}/stream/${label}`;
}

/** The table named in a stream ARN, or undefined when it is not one. */
export function tableFromStreamArn(arn: string): string | undefined {
  return STREAM_ARN_PATTERN.exec(arn)?.[3];
}

/**
 * Who deleted the item of a REMOVE record: `ttlstream` (ttlstream's deleter, whose stream label is its own),
 * `dynamodb` (DynamoDB's own TTL, followed from the table's stream), or `application` (a REMOVE without the TTL
 * identity, taken from a stream with `streams.removes: all`).
 */
export type DeletedBy = 'ttlstream' | 'dynamodb' | 'application';

export function deletedBy(record: {
  eventSourceARN: string;
  userIdentity?: { type: string } | undefined;
}): DeletedBy {
  if (STREAM_ARN_PATTERN.exec(record.eventSourceARN)?.[4] === TTLSTREAM_STREAM_LABEL) return 'ttlstream';
  return record.userIdentity?.type === TTL_USER_IDENTITY.type ? 'dynamodb' : 'application';
}

const tableName = z.string().regex(TABLE_NAME_PATTERN, 'table names are 3-255 of A-Z a-z 0-9 _ - .');

/**
 * The `dynamodb` part of a REMOVE record. Unknown properties are dropped rather than rejected at
 * this level, so adding a field later does not turn old consumers' input into poison; inside
 * AttributeValues nothing unknown is tolerated (it would be data we cannot represent).
 */
export const StreamRecordDataSchema = z.object({
  /** Epoch SECONDS (a whole number, as Lambda receives it); the Kafka timestamp carries ms. */
  ApproximateCreationDateTime: z.number().int().nonnegative(),
  Keys: KeySchema,
  OldImage: AttributeMapSchema,
  /** Decimal string of 21+ digits; increases per item key (see docs/stream-contract.md). */
  SequenceNumber: z.string().regex(/^\d{21,40}$/, 'SequenceNumber is a decimal string of 21 to 40 digits'),
  SizeBytes: z.number().int().positive(),
  StreamViewType: z.enum(['NEW_AND_OLD_IMAGES', 'OLD_IMAGE']),
});

/**
 * A DynamoDB Streams REMOVE record, exactly as AWS Lambda receives one: a TTL deletion with DynamoDB's TTL identity,
 * or (only from a stream followed with `streams.removes: all`) another deletion, without `userIdentity`.
 */
export const StreamRecordSchema = z
  .object({
    eventID: z.string().min(1).max(128),
    eventName: z.literal('REMOVE'),
    eventVersion: z.literal('1.1'),
    eventSource: z.literal('aws:dynamodb'),
    awsRegion: z.string().regex(/^[a-z0-9-]+$/, 'awsRegion like us-east-1'),
    dynamodb: StreamRecordDataSchema,
    eventSourceARN: z.string().regex(STREAM_ARN_PATTERN, 'eventSourceARN must be a DynamoDB stream ARN'),
    userIdentity: z
      .object({
        type: z.literal(TTL_USER_IDENTITY.type),
        principalId: z.literal(TTL_USER_IDENTITY.principalId),
      })
      .optional(),
  })
  .superRefine((r, ctx) => {
    const { Keys, OldImage } = r.dynamodb;
    for (const [name, value] of Object.entries(Keys)) {
      const old = Object.hasOwn(OldImage, name) ? OldImage[name] : undefined;
      if (old === undefined || !attributeValuesEqual(old, value)) {
        ctx.addIssue({
          code: 'custom',
          message: `key attribute ${name} differs from OldImage`,
          path: ['dynamodb', 'Keys', name],
        });
      }
    }
    const arn = STREAM_ARN_PATTERN.exec(r.eventSourceARN);
    if (arn && arn[1] !== r.awsRegion) {
      ctx.addIssue({
        code: 'custom',
        message: 'eventSourceARN region differs from awsRegion',
        path: ['eventSourceARN'],
      });
    }
  });

export type StreamRecord = z.infer<typeof StreamRecordSchema>;
export type StreamRecordInput = z.input<typeof StreamRecordSchema>;

/** Reasons the deleter gives today; the field is open so new reasons do not break consumers. */
export const RETRACTION_REASONS = ['condition-failed', 'item-changed', 'item-missing'] as const;

/**
 * A compensating record: the REMOVE with `retractsEventID` was published but the item was not
 * deleted. A retracted eventID is never an effective deletion.
 */
export const RetractionSchema = z.object({
  eventName: z.literal('RETRACT'),
  retractsEventID: z.string().min(1).max(128),
  table: tableName,
  Keys: KeySchema,
  reason: z.string().min(1).max(256),
  /** Epoch MILLISECONDS. */
  retractedAt: z.number().int().nonnegative(),
});

export type Retraction = z.infer<typeof RetractionSchema>;
export type RetractionInput = z.input<typeof RetractionSchema>;

/** A REMOVE record's fields, whatever shape its two maps take (SDK, Avro or JSON AttributeValues). */
export interface StreamRecordOf<M> {
  eventID: string;
  eventName: string;
  eventVersion: string;
  eventSource: string;
  awsRegion: string;
  dynamodb: {
    ApproximateCreationDateTime: number;
    Keys: M;
    OldImage: M;
    SequenceNumber: string;
    SizeBytes: number;
    StreamViewType: string;
  };
  eventSourceARN: string;
  userIdentity: { type: string; principalId: string };
}

/** A record's fields but its identity, whose shape differs from one encoding to the next. */
export type StreamRecordFields<M> = Omit<StreamRecordOf<M>, 'userIdentity'>;

/** A retraction's fields, whatever shape its key map takes. */
export interface RetractionOf<M> {
  eventName: string;
  retractsEventID: string;
  table: string;
  Keys: M;
  reason: string;
  retractedAt: number;
}

/**
 * The record with its Keys and OldImage converted by `map`, every other field but `userIdentity` copied as it is, in
 * the field order Lambda receives (JSON.stringify of a JSON-shaped one, its identity added last, is the record's JSON
 * encoding).
 */
export function withRecordMaps<A, B>(r: StreamRecordFields<A>, map: (m: A) => B): StreamRecordFields<B> {
  const d = r.dynamodb;
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion,
    eventSource: r.eventSource,
    awsRegion: r.awsRegion,
    dynamodb: {
      ApproximateCreationDateTime: d.ApproximateCreationDateTime,
      Keys: map(d.Keys),
      OldImage: map(d.OldImage),
      SequenceNumber: d.SequenceNumber,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType,
    },
    eventSourceARN: r.eventSourceARN,
  };
}

/** The retraction with its Keys converted by `map`, every other field copied as it is, in schema order. */
export function withRetractionKeys<A, B>(r: RetractionOf<A>, map: (m: A) => B): RetractionOf<B> {
  return {
    eventName: r.eventName,
    retractsEventID: r.retractsEventID,
    table: r.table,
    Keys: map(r.Keys),
    reason: r.reason,
    retractedAt: r.retractedAt,
  };
}

/** The table a REMOVE record belongs to (from its eventSourceARN, which the schema guarantees). */
export function tableOf(record: StreamRecord): string {
  const table = tableFromStreamArn(record.eventSourceARN);
  if (table === undefined) throw new DataError(`not a stream ARN: ${record.eventSourceARN}`);
  return table;
}

/** True for the records DynamoDB's own TTL produces, the test consumers use to tell TTL deletes apart. */
export function isTtlDelete(record: {
  eventName?: string;
  userIdentity?: { type?: string; principalId?: string };
}): boolean {
  return (
    record.eventName === 'REMOVE' &&
    record.userIdentity?.type === TTL_USER_IDENTITY.type &&
    record.userIdentity.principalId === TTL_USER_IDENTITY.principalId
  );
}

export type { AttributeMap };
