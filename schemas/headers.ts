/** Kafka header names on every stream message (values are UTF-8 strings). */
export const HEADERS = {
  table: 'ttlstream-table',
  /** remove | retract */
  kind: 'ttlstream-kind',
  /** avro | json */
  encoding: 'ttlstream-encoding',
  /** Avro only: SHA-256 (hex) of the writer schema's Parsing Canonical Form */
  fingerprint: 'ttlstream-schema-fingerprint',
  /** the record's eventID; for a retraction the retracted eventID */
  eventId: 'ttlstream-event-id',
  /**
   * Avro in the Confluent wire format only (schemas.registry set): the registry id of the writer schema, also in the
   * value's 5-byte prefix. Its presence is what tells ttlstream's readers to strip that prefix.
   */
  schemaId: 'ttlstream-schema-id',
} as const;

/** Set by the replay tool on records it re-publishes from the archive (value `1`): the archiver skips them. */
export const REPLAY_HEADER = 'ttlstream-replay';

/** Added by the archiver to a dead-lettered message, next to its original headers. */
export const DLQ_HEADERS = {
  reason: 'ttlstream-dlq-reason',
  topic: 'ttlstream-dlq-topic',
  partition: 'ttlstream-dlq-partition',
  offset: 'ttlstream-dlq-offset',
} as const;

/**
 * A dead letter of the streams role: a record of a followed DynamoDB stream that breaks the contract, kept as
 * DynamoDB gave it (JSON, binaries in base64), with `ttlstream-dlq-reason` and where it was read.
 */
export const STREAM_DLQ_HEADERS = {
  stream: 'ttlstream-dlq-stream',
  shard: 'ttlstream-dlq-shard',
  sequence: 'ttlstream-dlq-sequence',
} as const;

export type Encoding = 'avro' | 'json';
export const ENCODINGS: readonly Encoding[] = ['avro', 'json'];

export type RecordKind = 'remove' | 'retract';
export const KINDS: readonly RecordKind[] = ['remove', 'retract'];

/** kafkajs hands headers as Buffer | string | (Buffer | string)[] | undefined. */
export type HeaderValue = Buffer | string | (Buffer | string)[] | undefined;
export type MessageHeaders = Record<string, HeaderValue>;
