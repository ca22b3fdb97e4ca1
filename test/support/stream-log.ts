import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import { decodeMessage, PoisonRecordError, type Decoded, type MessageHeaders } from '../../schemas';

/** One message of the stream topic as read back: decoded, or the reason it is poison. */
export interface StreamMessage {
  partition: number;
  offset: number;
  /** The Kafka message timestamp (the producer's send time, ms). */
  timestampMs: number;
  key: string | null;
  decoded?: Decoded;
  poison?: string;
}

/**
 * The whole stream topic, read from the beginning by a consumer group of its own and kept by (partition, offset),
 * so redelivery after a broker restart or a rebalance never counts a message twice. `catchUp` waits until every
 * message below the topic's current end offsets has been read: what the checker sees is then everything that was
 * acknowledged before the call.
 */
export class StreamLog {
  private readonly byCoordinate = new Map<string, StreamMessage>();
  private readonly consumedUpTo = new Map<number, number>();
  private consumer?: Consumer;
  private admin?: Admin;

  constructor(
    private readonly kafka: Kafka,
    readonly topic: string,
  ) {}

  static async start(kafka: Kafka, topic: string): Promise<StreamLog> {
    const log = new StreamLog(kafka, topic);
    await log.start();
    return log;
  }

  async start(): Promise<void> {
    this.admin = this.kafka.admin();
    await this.admin.connect();
    this.consumer = this.kafka.consumer({
      groupId: `ground-truth-${randomBytes(6).toString('hex')}`,
      sessionTimeout: 30_000,
      heartbeatInterval: 1000,
      retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await this.consumer.run({
      partitionsConsumedConcurrently: 8,
      eachMessage: async ({ partition, message }) => {
        const offset = Number(message.offset);
        const m: StreamMessage = {
          partition,
          offset,
          timestampMs: Number(message.timestamp),
          key: message.key ? message.key.toString('utf8') : null,
        };
        try {
          m.decoded = decodeMessage(message.value, (message.headers ?? {}) as MessageHeaders);
        } catch (err) {
          m.poison =
            err instanceof PoisonRecordError ? err.message : `unexpected decoder error: ${String(err)}`;
        }
        this.byCoordinate.set(`${partition}:${offset}`, m);
        this.consumedUpTo.set(partition, Math.max(this.consumedUpTo.get(partition) ?? -1, offset));
      },
    });
  }

  /** End offsets (the next offset to be written) per partition, now. */
  async endOffsets(): Promise<Map<number, number>> {
    const admin = this.admin;
    if (!admin) throw new Error('StreamLog not started');
    const offsets = await admin.fetchTopicOffsets(this.topic);
    return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  }

  /** Wait until every message below `target` (default: the end offsets now) has been read. */
  async catchUp(timeoutMs = 60_000, target?: Map<number, number>): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let want = target;
    for (;;) {
      try {
        want ??= await this.endOffsets();
        const behind = [...want].filter(
          ([p, high]) => high > 0 && (this.consumedUpTo.get(p) ?? -1) < high - 1,
        );
        if (behind.length === 0) return;
        if (Date.now() > deadline) {
          throw new Error(
            `stream log of ${this.topic} did not catch up within ${timeoutMs} ms: ` +
              behind
                .map(([p, high]) => `partition ${p} read to ${this.consumedUpTo.get(p) ?? -1}, end ${high}`)
                .join('; '),
          );
        }
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
      await sleep(200);
    }
  }

  /** Every message read so far, in (partition, offset) order. */
  messages(): StreamMessage[] {
    return [...this.byCoordinate.values()].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
    this.consumer = undefined;
    this.admin = undefined;
  }
}
