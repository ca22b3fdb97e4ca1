import { Kafka, logLevel, type Consumer, type ConsumerConfig, type EachMessagePayload } from 'kafkajs';
import { silentLogger, type Logger } from '../core/logger';
import {
  PoisonRecordError,
  decodeMessage,
  tableOf,
  type MessageHeaders,
  type Retraction,
  type StreamRecord,
} from '../schemas';
import { DedupeWindow } from './dedupe-window';
import { ValidationError } from '../core/errors';

/** Where a record was read from. `table` is the DynamoDB table of the record. */
export interface RecordMeta {
  topic: string;
  partition: number;
  offset: string;
  table: string;
  /** Kafka message timestamp, epoch ms (when the deleter published the record). */
  timestamp: number;
  key: string | null;
}

/** Where a poison message was read from, with its raw bytes for a dead-letter copy. */
export interface PoisonMeta {
  topic: string;
  partition: number;
  offset: string;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: MessageHeaders;
}

export interface ConsumeTtlStreamOptions {
  /** Brokers to connect to (host:port); or pass a ready `kafka` client instead. */
  brokers?: string[];
  kafka?: Kafka;
  clientId?: string;
  groupId: string;
  /** Topics (or patterns, matched against existing topics at start). Default ['ttlstream.remove']. */
  topics?: (string | RegExp)[];
  /** Where a new consumer group starts: the oldest retained record (true) or new ones only (default). */
  fromBeginning?: boolean;
  /**
   * An effective TTL deletion. Called at least once per record: a throw makes Kafka redeliver
   * it (the offset is committed only after this resolves), and the same eventID may arrive twice
   * after a producer retry or a consumer restart. Key your effects by `record.eventID`.
   */
  onRecord: (record: StreamRecord, meta: RecordMeta) => Promise<void> | void;
  /**
   * The REMOVE with `retraction.retractsEventID` did not happen: undo what onRecord did for that
   * eventID, if anything. Without this handler retractions are only logged, so a consumer that
   * acts on REMOVEs should set it.
   */
  onRetraction?: (retraction: Retraction, meta: RecordMeta) => Promise<void> | void;
  /** A message that is not a valid record; consumption goes on after this resolves. Default: log and skip. */
  onPoison?: (error: PoisonRecordError, meta: PoisonMeta) => Promise<void> | void;
  /** How many recent eventIDs to remember for de-duplication and retraction (default 100 000). */
  dedupeWindow?: number;
  partitionsConsumedConcurrently?: number;
  /** Extra kafkajs consumer settings (sessionTimeout, heartbeatInterval, ...). */
  consumerConfig?: Omit<ConsumerConfig, 'groupId'>;
  logger?: Logger;
}

export interface TtlStreamConsumer {
  /** Finish the message in hand, commit, leave the group and disconnect. Idempotent. */
  stop(): Promise<void>;
  /** The kafkajs consumer, for events (e.g. consumer.events.GROUP_JOIN) and metrics. */
  readonly consumer: Consumer;
}

export const DEFAULT_STREAM_TOPIC = 'ttlstream.remove';

/**
 * Consume ttlstream's REMOVE stream: decode either encoding, validate, drop duplicates within a
 * window, honour retractions and hand typed records to `onRecord`. Resolves once subscribed and
 * running.
 */
export async function consumeTtlStream(options: ConsumeTtlStreamOptions): Promise<TtlStreamConsumer> {
  const kafka = options.kafka ?? buildKafka(options);
  const consumer = kafka.consumer({ ...options.consumerConfig, groupId: options.groupId });
  const handle = messageHandler(options, options.logger ?? silentLogger);
  await consumer.connect();
  try {
    await consumer.subscribe({
      topics: options.topics ?? [DEFAULT_STREAM_TOPIC],
      fromBeginning: options.fromBeginning ?? false,
    });
    await consumer.run({
      autoCommit: true,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
      eachMessage: handle,
    });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    consumer,
    stop: () => (stopping ??= consumer.disconnect()),
  };
}

/** Where a message was read from, without the table (known once it is decoded). */
type MessageMeta = Omit<RecordMeta, 'table'>;

/** The consumer's eachMessage: decode, then hand on a REMOVE or a retraction, or report a poison message. */
function messageHandler(
  options: ConsumeTtlStreamOptions,
  logger: Logger,
): (payload: EachMessagePayload) => Promise<void> {
  const window = new DedupeWindow(options.dedupeWindow ?? 100_000);
  return async ({ topic, partition, message }) => {
    const headers = (message.headers ?? {}) as MessageHeaders;
    const timestamp = Number(message.timestamp);
    let decoded;
    try {
      decoded = decodeMessage(message.value, headers);
    } catch (err) {
      if (!(err instanceof PoisonRecordError)) throw err;
      const meta: PoisonMeta = {
        topic,
        partition,
        offset: message.offset,
        timestamp,
        key: message.key,
        value: message.value,
        headers,
      };
      if (options.onPoison) await options.onPoison(err, meta);
      else
        logger.error(
          { topic, partition, offset: message.offset, reason: err.reason, err: err.message },
          'poison message skipped',
        );
      return;
    }
    const meta: MessageMeta = {
      topic,
      partition,
      offset: message.offset,
      timestamp,
      key: message.key ? message.key.toString('utf8') : null,
    };
    if (decoded.kind === 'remove') await handOnRemove(options, logger, window, decoded.record, meta);
    else await handOnRetraction(options, logger, window, decoded.retraction, meta);
  };
}

function withTable({ topic, partition, offset, timestamp, key }: MessageMeta, table: string): RecordMeta {
  return { topic, partition, offset, table, timestamp, key };
}

/** A REMOVE not seen (nor retracted) within the window goes to onRecord, and is remembered once handled. */
async function handOnRemove(
  options: ConsumeTtlStreamOptions,
  logger: Logger,
  window: DedupeWindow,
  record: StreamRecord,
  meta: MessageMeta,
): Promise<void> {
  const id = record.eventID;
  if (window.has(`remove:${id}`) || window.has(`retract:${id}`)) {
    logger.debug(
      { eventID: id, topic: meta.topic, partition: meta.partition, offset: meta.offset },
      'duplicate or retracted REMOVE skipped',
    );
    return;
  }
  await options.onRecord(record, withTable(meta, tableOf(record)));
  window.touch(`remove:${id}`);
}

/** A retraction not seen within the window goes to onRetraction (logged without one), and is remembered. */
async function handOnRetraction(
  options: ConsumeTtlStreamOptions,
  logger: Logger,
  window: DedupeWindow,
  retraction: Retraction,
  meta: MessageMeta,
): Promise<void> {
  const id = retraction.retractsEventID;
  if (window.has(`retract:${id}`)) return;
  if (options.onRetraction) await options.onRetraction(retraction, withTable(meta, retraction.table));
  else
    logger.warn(
      { retractsEventID: id, table: retraction.table, reason: retraction.reason },
      'retraction without onRetraction handler',
    );
  window.touch(`retract:${id}`);
}

function buildKafka(options: ConsumeTtlStreamOptions): Kafka {
  if (!options.brokers || options.brokers.length === 0)
    throw new ValidationError('consumeTtlStream needs `brokers` or `kafka`');
  return new Kafka({
    clientId: options.clientId ?? 'ttlstream-consumer',
    brokers: options.brokers,
    logLevel: logLevel.WARN,
  });
}
