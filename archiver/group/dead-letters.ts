import type { Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { ReconnectingProducer } from '../../core/reconnecting-producer';
import { abortWhen, withRetry } from '../../core/retry';
import { sendToDeadLetter, type PoisonMessage } from '../dead-letter';
import type { LeavingClients } from './leaving';
import { NotRunningError } from '../../core/errors';

/** The wait between two attempts at a dead letter: from 200 ms, doubling, up to 10 s. */
const DEAD_LETTER_BACKOFF = { initialDelayMs: 200, maxDelayMs: 10_000 };

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
    // this partition for ever (test/integration/faults/network-archiver.test.ts). A wait ends within
    // half a second of the partition being abandoned (a rebalance, a stop).
    if (abandoned()) return false;
    const { signal, stop } = abortWhen(abandoned);
    try {
      const sent = await withRetry(
        async () => {
          // Abandoned during the wait: sent again by the partition's next owner.
          if (abandoned()) return false;
          const producer = this.producer;
          if (!producer) throw new NotRunningError('archiver is not started');
          await producer.run((p) => sendToDeadLetter(p, this.topic, poison, reason));
          return true;
        },
        {
          retries: Infinity,
          ...DEAD_LETTER_BACKOFF,
          signal,
          onRetry: (sendErr, attempt) =>
            this.log.error(
              { err: sendErr, topic, partition, offset: message.offset, attempt },
              'dead-letter publish failed; retrying',
            ),
        },
      );
      if (sent) metrics.deadLettered.inc({ topic, reason });
      return sent;
    } catch (sendErr) {
      // Not retryable (the archiver is not started): the offset stays unaccepted, as for an abandoned partition.
      if (!abandoned())
        this.log.error(
          { err: sendErr, topic, partition, offset: message.offset },
          'dead-letter publish failed and trying again cannot help',
        );
    } finally {
      stop();
    }
    return false;
  }
}
