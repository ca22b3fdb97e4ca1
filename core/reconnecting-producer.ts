import type { Kafka, Producer, ProducerConfig } from 'kafkajs';
import { RetryableError } from './errors';
import type { Logger } from './logger';
import type { ErrorCode } from './error-codes';

/**
 * A kafkajs request got no answer within kafka.requestTimeoutMs. kafkajs fails the request but keeps its connection
 * and sends every retry down that same connection, so a connection whose peer vanished silently (no reset, no close)
 * would swallow a producer's sends for ever (test/integration/faults/network.test.ts and network-archiver.test.ts,
 * "silent kafka links").
 */
export class KafkaRequestTimedOut extends RetryableError {
  static override readonly code: ErrorCode = 'TTLSTREAM_KAFKA_REQUEST_TIMEOUT';
  constructor(readonly apiName: string) {
    super(`Kafka request ${apiName} timed out; the producer's connections are replaced`);
  }
}

/** One kafkajs producer: its connect, and a promise that rejects at its first request timeout (never resolves). */
interface Generation {
  producer: Producer;
  connected: Promise<void>;
  timedOut: Promise<never>;
  dropped: boolean;
}

export interface ReconnectingProducerOptions {
  /** Passed to every kafkajs producer this makes. */
  producer: ProducerConfig;
  /** Names the producer in its log lines. */
  name: string;
  /** Receives the disconnect of a dropped producer (default: left to finish in the background). */
  onDropped?: (disconnecting: Promise<void>) => void;
  /**
   * Drop the producer after any failed operation too, not only after a request timeout. For a producer whose
   * operations are rare and retried by the caller (dead letters), where a new producer costs one connect: kafkajs
   * 2.2.4 counts a broker as connected once its socket is, even when the first request on it (ApiVersions) failed,
   * and then fails every later request to it with "Broker not connected", for good.
   */
  replaceOnFailure?: boolean;
}

/**
 * A kafkajs producer that is replaced, not retried on, once one of its requests timed out: at the first
 * REQUEST_TIMEOUT the producer is dropped (disconnected in the background), what runs on it fails at once with
 * KafkaRequestTimedOut, and the next `run` connects a new producer, whose new connections do not share the silent
 * one's fate. One place for it, so the long-lived producers (the pipeline's publisher, the archiver's dead-letter
 * producer) cannot drift apart on it. A caller retries the failed operation as it would after Kafka was down;
 * whatever the dropped producer still delivers is a duplicate (a new producer has a new producer id, so the broker
 * cannot de-duplicate it: idempotence holds within one generation only).
 */
export class ReconnectingProducer {
  private current?: Generation;

  constructor(
    private readonly kafka: Kafka,
    private readonly logger: Logger,
    private readonly options: ReconnectingProducerOptions,
  ) {}

  /** Connect a producer now (the first `run` would otherwise); fails at a request timeout like any operation. */
  async connect(): Promise<void> {
    await this.generation().connected;
  }

  /** Disconnect the current producer; a later `run` connects a new one. */
  async disconnect(): Promise<void> {
    const gen = this.current;
    this.current = undefined;
    if (!gen) return;
    gen.dropped = true;
    await gen.producer.disconnect();
  }

  /**
   * `op` with the current producer (connected first when there is none), settled by whichever comes first: `op`, or
   * the producer's first request timeout (then KafkaRequestTimedOut; kafkajs alone would retry on the same
   * connection).
   */
  async run<T>(op: (producer: Producer) => Promise<T>): Promise<T> {
    const gen = this.generation();
    await gen.connected;
    try {
      return await Promise.race([op(gen.producer), gen.timedOut]);
    } catch (err) {
      if (this.options.replaceOnFailure && !gen.dropped) {
        this.logger.warn(
          { err, producer: this.options.name },
          'a Kafka send failed; reconnecting the producer',
        );
        this.drop(gen);
      }
      throw err;
    }
  }

  /** The current producer, or a new one when there is none (at start, or after a request timed out). */
  private generation(): Generation {
    if (this.current) return this.current;
    const producer = this.kafka.producer(this.options.producer);
    let fail: (err: Error) => void = () => undefined;
    const timedOut = new Promise<never>((_, reject) => (fail = reject));
    // Observed through `run` only; a timeout while nothing runs must not count as unhandled.
    timedOut.catch(() => undefined);
    const gen: Generation = { producer, timedOut, connected: Promise.resolve(), dropped: false };
    producer.on(producer.events.REQUEST_TIMEOUT, (e) => {
      const { apiName } = e.payload as { apiName?: string };
      const err = new KafkaRequestTimedOut(apiName ?? 'unknown');
      fail(err);
      if (gen.dropped) return;
      this.logger.warn(
        { err, producer: this.options.name },
        'a Kafka request timed out; reconnecting the producer',
      );
      this.drop(gen);
    });
    // Current before it connects: concurrent runs share it, and a timeout during connect drops it.
    this.current = gen;
    gen.connected = Promise.race([producer.connect(), timedOut]);
    // A producer that could not connect is not kept: the next run tries a new one.
    gen.connected.catch(() => this.drop(gen));
    return gen;
  }

  private drop(gen: Generation): void {
    if (gen.dropped) return;
    gen.dropped = true;
    if (this.current === gen) this.current = undefined;
    const disconnecting = gen.producer.disconnect().catch(() => undefined);
    if (this.options.onDropped) this.options.onDropped(disconnecting);
  }
}
