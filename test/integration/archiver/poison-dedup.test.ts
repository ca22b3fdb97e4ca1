import type { Admin, KafkaMessage, Producer } from 'kafkajs';
import { DLQ_HEADERS, REPLAY_HEADER } from '../../../archiver';
import { openArchiveStorage } from '../../../archive/storage';
import type { TtlstreamConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { HEADERS } from '../../../schemas';
import { createTestTopic, uniqueName } from '../../support/stack';
import { useArchiverSuite } from '../../support/archiver-suite';
import { waitFor } from '../../support/wait-for';
import {
  allCommitted,
  countIds,
  makeRecord,
  produceAll,
  readArchive,
  removeMessage,
} from '../../support/archive-fixture';
import { startArchiverFor } from '../../support/in-process-archiver';

const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

describe('archiver: poison, duplicates and replayed records', () => {
  const suite = useArchiverSuite();
  const { kafka } = suite;
  let admin: Admin;
  let producer: Producer;
  beforeAll(() => {
    admin = suite.admin();
    producer = suite.producer();
  });
  const configFor = (name: string): TtlstreamConfig => suite.configFor(name, { partitions: 2 });

  it('sends poison to the dead-letter topic with its origin and reason, archives the rest, and moves on', async () => {
    const name = uniqueName('arch-poison');
    const config = configFor(name);
    const topic = await createTestTopic(admin, config.topics.shared, 2);
    const good = Array.from({ length: 200 }, (_, i) => makeRecord('orders', i, BASE + i));
    const valid = removeMessage(good[0] ?? makeRecord('orders', 0, BASE), 'orders');
    const poison = [
      { key: 'p-garbage', value: Buffer.from([0xde, 0xad, 0xbe, 0xef]), headers: { ...valid.headers } },
      { key: 'p-noheaders', value: valid.value, headers: { custom: 'kept' } },
      {
        key: 'p-badjson',
        value: Buffer.from('{"eventName":'),
        headers: { ...valid.headers, [HEADERS.encoding]: 'json' },
      },
      { key: 'p-tombstone', value: null, headers: { ...valid.headers } },
    ];
    const messages = good.map((r) => removeMessage(r, 'orders'));
    // Poison in the middle of the stream, on both partitions.
    messages.splice(50, 0, ...poison.map((p) => ({ ...p, partition: 0 })));
    messages.splice(150, 0, ...poison.map((p) => ({ ...p, key: `${p.key}-1`, partition: 1 })));
    await produceAll(producer, topic, messages);

    const before = (await metrics.deadLettered.get()).values
      .filter((v) => v.labels.topic === topic)
      .reduce((n, v) => n + v.value, 0);
    const storage = openArchiveStorage(config);
    const archiver = await startArchiverFor(config, { kafka, storage, logger: silentLogger });
    const dlq: KafkaMessage[] = [];
    const reader = kafka.consumer({ groupId: `${name}-dlq-reader` });
    try {
      await waitFor(
        'good rows archived',
        async () => (await readArchive(storage)).rows.length >= good.length,
      );
      await reader.connect();
      await reader.subscribe({ topics: [config.topics.deadLetter], fromBeginning: true });
      await reader.run({ eachMessage: async ({ message }) => void dlq.push(message) });
      await waitFor('dead letters', async () => dlq.length >= 2 * poison.length);
      await waitFor('everything committed', () => allCommitted(admin, config.archive.groupId, topic));
    } finally {
      await reader.disconnect();
      await archiver.stop();
    }
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    expect(ids.size).toBe(good.length);
    for (const r of good) expect(ids.get(r.eventID)).toBe(1);

    expect(dlq).toHaveLength(2 * poison.length);
    const header = (m: KafkaMessage, h: string): string | undefined => m.headers?.[h]?.toString();
    const byKey = new Map(dlq.map((m) => [m.key?.toString() ?? '', m]));
    for (const [suffix, partition] of [
      ['', '0'],
      ['-1', '1'],
    ] as const) {
      const garbage = byKey.get(`p-garbage${suffix}`) as KafkaMessage;
      expect(garbage.value).toEqual(Buffer.from([0xde, 0xad, 0xbe, 0xef]));
      expect(header(garbage, DLQ_HEADERS.reason)).toBe('undecodable');
      expect(header(garbage, DLQ_HEADERS.topic)).toBe(topic);
      expect(header(garbage, DLQ_HEADERS.partition)).toBe(partition);
      expect(header(garbage, HEADERS.kind)).toBe('remove');
      const noHeaders = byKey.get(`p-noheaders${suffix}`) as KafkaMessage;
      expect(header(noHeaders, DLQ_HEADERS.reason)).toBe('missing-headers');
      expect(header(noHeaders, 'custom')).toBe('kept');
      expect(header(byKey.get(`p-badjson${suffix}`) as KafkaMessage, DLQ_HEADERS.reason)).toBe('undecodable');
      expect(header(byKey.get(`p-tombstone${suffix}`) as KafkaMessage, DLQ_HEADERS.reason)).toBe(
        'undecodable',
      );
    }
    // The dead-letter offsets point at the poison messages themselves.
    for (const m of dlq) expect(Number(header(m, DLQ_HEADERS.offset))).toBeGreaterThanOrEqual(0);
    const after = (await metrics.deadLettered.get()).values
      .filter((v) => v.labels.topic === topic)
      .reduce((n, v) => n + v.value, 0);
    expect(after - before).toBe(2 * poison.length);
  });

  it('archives an eventID published twice only once, and never re-archives replayed records', async () => {
    const name = uniqueName('arch-dup');
    const config = configFor(name);
    const topic = await createTestTopic(admin, config.topics.shared, 2);
    const records = Array.from({ length: 300 }, (_, i) => makeRecord('orders', i, BASE + i));
    const replayed = Array.from({ length: 20 }, (_, i) => makeRecord('orders', 10_000 + i, BASE + i));
    // Every record once, then a third of them again (a producer's crash recovery re-publishes),
    // some in the same roll and some in a later roll.
    await produceAll(
      producer,
      topic,
      records.map((r) => removeMessage(r, 'orders')),
    );
    await produceAll(
      producer,
      topic,
      records.filter((_, i) => i % 3 === 0).map((r) => removeMessage(r, 'orders')),
    );
    await produceAll(
      producer,
      topic,
      replayed.map((r) => removeMessage(r, 'orders', { headers: { [REPLAY_HEADER]: '1' } })),
    );

    const storage = openArchiveStorage(config);
    const first = await startArchiverFor(config, { kafka, storage, logger: silentLogger });
    try {
      await waitFor('first pass committed', () => allCommitted(admin, config.archive.groupId, topic));
    } finally {
      await first.stop();
    }
    // More duplicates after a restart: the window is rebuilt from the archive's key indexes.
    await produceAll(
      producer,
      topic,
      records.filter((_, i) => i % 5 === 0).map((r) => removeMessage(r, 'orders')),
    );
    const second = await startArchiverFor(config, { kafka, storage, logger: silentLogger });
    try {
      await waitFor('second pass committed', () => allCommitted(admin, config.archive.groupId, topic));
    } finally {
      await second.stop();
    }
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    expect(ids.size).toBe(records.length);
    for (const r of records) expect(ids.get(r.eventID)).toBe(1);
    for (const r of replayed) expect(ids.has(r.eventID)).toBe(false);
  });
});
