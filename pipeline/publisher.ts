import { CompressionTypes, type Kafka, type Message } from 'kafkajs';
import type { TopicsSettings } from '../core/config';
import type { Logger } from '../core/logger';
import { KafkaRequestTimedOut, ReconnectingProducer } from '../core/reconnecting-producer';
import { metrics } from '../core/metrics';
import { applyTopics, declaredTopics, streamTopicFor } from '../core/topics';
import {
  TTLSTREAM_STREAM_LABEL,
  TTL_USER_IDENTITY,
  encodeRemove,
  encodeRetraction,
  messageKey,
  streamArn,
  type Retraction,
  type StreamRecord,
} from '../schemas';
import type { Item } from '../policy/types';
import { NotRunningError } from '../core/errors';
import type { StreamSchemaIds } from '../schemas/schema-ids';

/** The account id in the stream ARNs ttlstream writes (there is no real account behind a local table). */
export const STREAM_ACCOUNT = '000000000000';
export const STREAM_LABEL = TTLSTREAM_STREAM_LABEL;

/** What REMOVE records and their topics are made of: the stream's region and the topic settings. */
export interface StreamSettings {
  region: string;
  topics: TopicsSettings;
}

export interface RemoveInput {
  table: string;
  keys: Item;
  image: Item;
  eventID: string;
  sequenceNumber: string;
  decidedAtMs: number;
  sizeBytes: number;
}

export function buildRemoveRecord(config: StreamSettings, r: RemoveInput): StreamRecord {
  return {
    eventID: r.eventID,
    eventName: 'REMOVE',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: config.region,
    dynamodb: {
      // Seconds, as Lambda receives it: the decision time, within one batch of the deletion itself.
      ApproximateCreationDateTime: Math.floor(r.decidedAtMs / 1000),
      Keys: r.keys,
      OldImage: r.image,
      SequenceNumber: r.sequenceNumber,
      SizeBytes: r.sizeBytes,
      StreamViewType: 'OLD_IMAGE',
    },
    eventSourceARN: streamArn(config.region, STREAM_ACCOUNT, r.table, STREAM_LABEL),
    userIdentity: { ...TTL_USER_IDENTITY },
  };
}

export type Outgoing =
  | { kind: 'remove'; table: string; record: StreamRecord }
  | { kind: 'retract'; table: string; retraction: Retraction };

/** Re-exported: publish rejects with it when a request timed out (the producer is replaced). */
export { KafkaRequestTimedOut };

export interface PublisherOptions {
  compression?: CompressionTypes;
  /** Set when schemas.registry is: Avro records go out in the Confluent wire format with these ids. */
  schemaIds?: StreamSchemaIds;
  /** Counts each message acknowledged; default the producer's `ttlstream_producer_records_published_total`. */
  onPublished?: (m: Prepared) => void;
}

/**
 * The Kafka side of the roles that publish stream records (the producer, the streams role): an idempotent kafkajs
 * producer (acks -1). Concurrent `publish` calls from several shard workers are coalesced into one sendBatch while a
 * previous one is in flight, because kafkajs serializes an idempotent producer's requests per broker anyway; merging
 * them keeps one round trip per wave instead of one per caller.
 */
export class Publisher {
  /**
   * Replaced at its first request timeout (core/reconnecting-producer.ts): the batch fails before its next state
   * change and is retried from the journal, as when Kafka is down; whatever the dropped producer still delivers is a
   * duplicate under the same eventIDs.
   */
  private readonly producer: ReconnectingProducer;
  /** Between connect and disconnect; the producer may be between generations meanwhile (after a timeout). */
  private connected = false;
  private readonly ensuredTopics = new Set<string>();
  private queue: Array<{ messages: Prepared[]; resolve: () => void; reject: (err: unknown) => void }> = [];
  private inFlight = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly stream: StreamSettings,
    private readonly logger: Logger,
    private readonly options: PublisherOptions = {},
  ) {
    this.producer = new ReconnectingProducer(kafka, logger, {
      name: 'publisher',
      producer: { idempotent: true, allowAutoTopicCreation: false },
      // A failed publish fails its batch, which is retried from the journal with back-off (seconds), so a new
      // producer per failure costs one connect per retry; keeping the old one risks kafkajs 2.2.4's state after a
      // failed reconnect, where every request fails with "Broker not connected" until the process restarts
      // (seen on the dead-letter producer, core/reconnecting-producer.ts). Duplicates of a dropped producer's
      // sends carry the same eventIDs.
      replaceOnFailure: true,
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
    this.connected = true;
  }

  async disconnect(): Promise<void> {
    this.connected = false;
    await this.producer.disconnect();
  }

  /**
   * Create (or converge) the stream topics of these tables before the first publish to them, and with a schema
   * registry, resolve their schema ids (at start-up, a registry that cannot be reached fails the start).
   */
  async ensureTopics(tables: readonly string[]): Promise<void> {
    await this.ensureKafkaTopics(tables);
    await this.options.schemaIds?.ensure(tables.map((t) => streamTopicFor(this.stream, t)));
  }

  private async ensureKafkaTopics(tables: readonly string[]): Promise<void> {
    const missing = [...new Set(tables)].filter(
      (t) => !this.ensuredTopics.has(streamTopicFor(this.stream, t)),
    );
    if (missing.length === 0) return;
    // A fresh admin client per call, given up at its first request timeout: kafkajs would retry on the same
    // (possibly silent) connection, holding the batch that needs the topic for its retries × requestTimeout.
    // The batch fails instead and is retried with a new client and new connections.
    const admin = this.kafka.admin();
    let fail: (err: Error) => void = () => undefined;
    const timedOut = new Promise<never>((_, reject) => (fail = reject));
    timedOut.catch(() => undefined);
    admin.on(admin.events.REQUEST_TIMEOUT, (e) => {
      fail(new KafkaRequestTimedOut((e.payload as { apiName?: string }).apiName ?? 'unknown'));
    });
    let gaveUp = false;
    try {
      const result = await Promise.race([
        admin.connect().then(() => applyTopics(admin, declaredTopics(this.stream, missing))),
        timedOut,
      ]);
      if (result.partitionMismatches.length > 0) {
        this.logger.warn(
          { mismatches: result.partitionMismatches },
          'stream topics have another partition count than declared',
        );
      }
    } catch (err) {
      gaveUp = err instanceof KafkaRequestTimedOut;
      if (gaveUp) this.logger.warn({ err }, 'a Kafka admin request timed out while creating stream topics');
      throw err;
    } finally {
      // A client given up on may hang on its silent connection while disconnecting: not awaited then.
      const disconnecting = admin.disconnect().catch(() => undefined);
      if (!gaveUp) await disconnecting;
    }
    for (const t of missing) this.ensuredTopics.add(streamTopicFor(this.stream, t));
  }

  /**
   * Resolves once every message is acknowledged by all in-sync replicas. Messages not yet prepared are encoded
   * (and validated against the contract) here, so a bad record fails its own caller, never a coalesced neighbour.
   */
  publish(messages: Array<Outgoing | Prepared>): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    let prepared: Prepared[];
    try {
      prepared = messages.map((m) => ('message' in m ? m : this.prepare(m)));
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ messages: prepared, resolve, reject });
      void this.drain();
    });
  }

  /** Encode and validate one message; throws (a PoisonRecordError from schemas/) when it breaks the contract. */
  prepare(m: Outgoing): Prepared {
    const encoding = this.stream.topics.encoding;
    const e =
      m.kind === 'remove' ? encodeRemove(m.record, encoding) : encodeRetraction(m.retraction, encoding);
    const keys = m.kind === 'remove' ? m.record.dynamodb.Keys : m.retraction.Keys;
    return {
      table: m.table,
      kind: m.kind,
      topic: streamTopicFor(this.stream, m.table),
      message: { key: messageKey(m.table, keys), value: e.value, headers: e.headers },
    };
  }

  /** The message as sent: framed for the registry when there is one (a new object: a retried Prepared stays bare). */
  private onTheWire(m: Prepared): Message {
    const ids = this.options.schemaIds;
    if (!ids) return m.message;
    const { value, headers } = ids.onTheWire(m.topic, m.kind, {
      value: m.message.value,
      headers: m.message.headers,
    });
    return { key: m.message.key, value, headers };
  }

  private async drain(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      while (this.queue.length > 0) {
        const wave = this.queue.splice(0);
        try {
          await this.send(wave.flatMap((w) => w.messages));
          for (const w of wave) w.resolve();
        } catch (err) {
          for (const w of wave) w.reject(err);
        }
      }
    } finally {
      this.inFlight = false;
    }
  }

  private async send(all: Prepared[]): Promise<void> {
    if (!this.connected) throw new NotRunningError('publisher is not connected');
    await this.ensureTopics(all.map((m) => m.table));
    // Several requests when the messages are large: the broker refuses a record batch above its
    // message.max.bytes (1 MiB by default), and items of up to 400 KB would otherwise stall the shard for ever.
    // Sequential, so one item's records keep their order.
    await this.producer.run(async (producer) => {
      for (const chunk of chunkByBytes(all, MAX_REQUEST_BYTES)) {
        const byTopic = new Map<string, Message[]>();
        for (const m of chunk) {
          const list = byTopic.get(m.topic) ?? [];
          list.push(this.onTheWire(m));
          byTopic.set(m.topic, list);
        }
        await producer.sendBatch({
          acks: -1,
          compression: this.options.compression ?? CompressionTypes.None,
          topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
        });
      }
    });
    const count =
      this.options.onPublished ??
      ((m: Prepared) => metrics.recordsPublished.inc({ table: m.table, kind: m.kind }));
    for (const m of all) count(m);
  }
}

/** Below the broker's default message.max.bytes (1 MiB) with room for batch and header overhead. */
export const MAX_REQUEST_BYTES = 900 * 1024;

function sizeOf(m: Prepared): number {
  let n = m.message.value.length + Buffer.byteLength(m.message.key) + 64;
  for (const [k, v] of Object.entries(m.message.headers ?? {})) n += k.length + String(v).length;
  return n;
}

/** Consecutive chunks of at most `max` bytes (a single larger message goes alone). */
export function chunkByBytes(all: readonly Prepared[], max: number): Prepared[][] {
  const out: Prepared[][] = [];
  let current: Prepared[] = [];
  let bytes = 0;
  for (const m of all) {
    const n = sizeOf(m);
    if (current.length > 0 && bytes + n > max) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(m);
    bytes += n;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** A message encoded for Kafka, with what the metrics need. */
export interface Prepared {
  table: string;
  kind: Outgoing['kind'];
  topic: string;
  message: { key: string; value: Buffer; headers: Record<string, string> };
}
