import type { Kafka, KafkaMessage } from 'kafkajs';
import { DeadLetters } from '../../../../archiver/group/dead-letters';
import { LeavingClients } from '../../../../archiver/group/leaving';
import { silentLogger } from '../../../../core/logger';

/** A Kafka whose producers connect, and whose sends do what `send` says for the n-th send overall. */
function kafkaSending(send: (n: number) => Promise<void>): { kafka: Kafka; sends: () => number } {
  let sends = 0;
  const producer = () => ({
    events: { REQUEST_TIMEOUT: 'producer.network.request_timeout' },
    on: () => undefined,
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    send: () => send(++sends),
  });
  return { kafka: { producer } as unknown as Kafka, sends: () => sends };
}

const message = {
  offset: '7',
  key: null,
  value: Buffer.from('?'),
  headers: {},
  timestamp: '0',
} as KafkaMessage;
const source = { topic: 'stream', partition: 0 };

describe('dead letters are retried by the error', () => {
  it('retries failed sends (each on a new producer) until one is acknowledged', async () => {
    const { kafka, sends } = kafkaSending((n) =>
      n < 3 ? Promise.reject(new Error('broker down')) : Promise.resolve(),
    );
    const dlq = new DeadLetters(kafka, silentLogger, 'stream.dlq', new LeavingClients());
    await dlq.connect();
    await expect(dlq.send(source, message, 'undecodable', null, () => false)).resolves.toBe(true);
    expect(sends()).toBe(3);
  });

  it('stops at a non-retryable error (not started) instead of trying for ever; the offset stays unaccepted', async () => {
    const { kafka, sends } = kafkaSending(() => Promise.resolve());
    const dlq = new DeadLetters(kafka, silentLogger, 'stream.dlq', new LeavingClients());
    await expect(dlq.send(source, message, 'undecodable', null, () => false)).resolves.toBe(false);
    expect(sends()).toBe(0);
  });

  it('gives up when the partition is abandoned during a wait, and sends nothing after that', async () => {
    let abandoned = false;
    const { kafka, sends } = kafkaSending(() => {
      abandoned = true;
      return Promise.reject(new Error('broker down'));
    });
    const dlq = new DeadLetters(kafka, silentLogger, 'stream.dlq', new LeavingClients());
    await dlq.connect();
    await expect(dlq.send(source, message, 'undecodable', null, () => abandoned)).resolves.toBe(false);
    expect(sends()).toBe(1);
  });
});
