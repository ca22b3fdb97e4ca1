import type { Kafka, KafkaMessage } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { ReconnectingProducer } from '../../core/reconnecting-producer';
import { sendToDeadLetter, type PoisonMessage } from '../dead-letter';
import type { LeavingClients } from './leaving';
import { NotRunningError } from '../../core/errors';

/**
 * Poison routing: the dead-letter producer (replaced at its first request timeout or failed send, like
 * the consumer and the admin client) and the send a poison record's partition waits for.
 */
export class DeadLetters {
  private producer: ReconnectingProducer | null = null;

  constructor(
    private readonly kafka: Kafka,
    private readonly log: Logger,
    private readonly topic: string,
    private readonly leaving: LeavingClients,
  ) {}

  async connect(): Promise<void> {
    this.producer = new ReconnectingProducer(this.kafka, this.log, {
      name: 'dead-letter',
      producer: { idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false },
      replaceOnFailure: true,
      onDropped: (disconnecting) => this.leaving.add(disconnecting),
    });
    await this.producer.connect();
  }

  async disconnect(): Promise<void> {
    await this.producer?.disconnect().catch(() => undefined);
  }

  /**
   * True once the dead letter is acknowledged by all in-sync replicas; false when `abandoned()` says the
   * partition stopped being ours (a stop, a rebalance, a replaced consumer) before that: its offset must
   * then not be accepted, and the next owner sends the dead letter again. Never rejects.
   */
  async send(
    source: { topic: string; partition: number },
    message: KafkaMessage,
    reason: string,
    err: unknown,
    abandoned: () => boolean,
  ): Promise<boolean> {
    const { topic, partition } = source;
    this.log.warn(
      { topic, partition, offset: message.offset, reason, err },
      'poison record sent to the dead-letter topic',
    );
    const poison: PoisonMessage = {
      topic,
      partition,
      offset: message.offset,
      key: message.key ?? null,
      value: message.value ?? null,
      headers: message.headers,
      timestamp: message.timestamp,
    };
    // The offset counts as processed only once the dead letter is on Kafka: keep trying. A request
    // timeout fails an attempt at once, and after any failed attempt the next one goes through a new
    // producer: a silent connection, or a producer kafkajs left "not connected", would otherwise hold
    // this partition for ever (test/integration/faults/network-archiver.test.ts).
    for (let attempt = 0; !abandoned(); attempt++) {
      try {
        const producer = this.producer;
        if (!producer) throw new NotRunningError('archiver is not started');
        await producer.run((p) => sendToDeadLetter(p, this.topic, poison, reason));
        metrics.deadLettered.inc({ topic, reason });
        return true;
      } catch (sendErr) {
        if (abandoned()) break;
        this.log.error(
          { err: sendErr, topic, partition, offset: message.offset, attempt },
          'dead-letter publish failed; retrying',
        );
        const until = Date.now() + Math.min(10_000, 200 * 2 ** Math.min(attempt, 6));
        // In short steps: a rebalance or a stop must not wait for the whole delay.
        while (!abandoned() && Date.now() < until) await sleep(Math.min(500, until - Date.now()));
      }
    }
    return false;
  }
}
