import type { Admin, Message, Producer } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKafka } from '../../../core/clients';
import {
  consumeTtlStream,
  type PoisonMeta,
  type RecordMeta,
  type TtlStreamConsumer,
} from '../../../consumer';
import {
  HEADERS,
  PoisonRecordError,
  deriveEventId,
  encodeRemove,
  formatSequenceNumber,
  messageKey,
  type Encoding,
  type Retraction,
  type StreamRecord,
} from '../../../schemas';
import { removeMessage, removeRecord, retractMessage } from '../../support/archive-fixture';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';

const TABLE = 'orders';

function record(pk: string, seq: number): StreamRecord {
  const keys = { pk: { S: pk } };
  return removeRecord({
    table: TABLE,
    eventID: deriveEventId({ table: TABLE, keys, seq }),
    keys,
    image: {
      ...keys,
      expiresAt: { N: String(1700000000 + seq) },
      blob: { B: new Uint8Array([seq % 256, 0, 255]) },
    },
    deletedAtSec: 1700000000 + seq,
    sequenceNumber: formatSequenceNumber(seq),
    sizeBytes: 40,
    viewType: 'NEW_AND_OLD_IMAGES',
    streamLabel: '2024-01-01T00:00:00.000',
  });
}

describe.each<Encoding>(['avro', 'json'])('consumeTtlStream against the real broker (%s)', (encoding) => {
  const config = testConfig();
  const kafka = createKafka(config, undefined, 'consumer-test');
  let admin: Admin;
  let producer: Producer;
  let topic: string;
  const running: TtlStreamConsumer[] = [];

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });

  beforeEach(async () => {
    topic = await createTestTopic(admin, uniqueName(`consumer-${encoding}`), 3);
    // A fresh producer per topic: a long-lived one can hold stale metadata for a just-created topic.
    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
    await producer.disconnect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  });

  afterAll(async () => {
    await admin.disconnect();
  });

  it('delivers typed records once, honours retractions, and routes poison to onPoison without stopping', async () => {
    const items = Array.from({ length: 12 }, (_, i) => record(`item-${i}`, i + 1));
    const retracted = record('item-0', 100); // a second deletion attempt of item-0 that failed
    const poisonSameKey: Message = {
      key: messageKey(TABLE, { pk: { S: 'item-1' } }),
      value: Buffer.from('definitely not a record'),
      headers: {
        [HEADERS.kind]: 'remove',
        [HEADERS.encoding]: encoding,
        [HEADERS.fingerprint]: 'ab'.repeat(32),
      },
    };
    const afterPoison = record('item-1', 200);
    const messages: Message[] = [
      ...items.map((r) => removeMessage(r, TABLE, { encoding })),
      removeMessage(items[3] as StreamRecord, TABLE, { encoding }), // a duplicate publish (producer retry)
      removeMessage(retracted, TABLE, { encoding }),
      retractMessage(retracted, TABLE, Date.now(), encoding),
      removeMessage(retracted, TABLE, { encoding }), // a late duplicate of the retracted REMOVE
      poisonSameKey,
      { key: 'tombstone', value: null, headers: encodeRemove(record('item-2', 300), encoding).headers }, // a null value with good headers
      { key: 'no-headers', value: Buffer.from('{}') },
      removeMessage(afterPoison, TABLE, { encoding }), // same partition as the poison: must still arrive
    ];
    await producer.send({ topic, acks: -1, messages });

    const records: Array<{ record: StreamRecord; meta: RecordMeta }> = [];
    const retractions: Retraction[] = [];
    const poison: Array<{ err: PoisonRecordError; meta: PoisonMeta }> = [];
    running.push(
      await consumeTtlStream({
        kafka,
        groupId: uniqueName('consumer-group'),
        topics: [topic],
        fromBeginning: true,
        onRecord: (record, meta) => void records.push({ record, meta }),
        onRetraction: (r) => void retractions.push(r),
        onPoison: (err, meta) => void poison.push({ err, meta }),
      }),
    );

    // 12 items + the retracted one (delivered before its retraction) + afterPoison
    await waitFor(
      'all records',
      () => records.length >= 14 && retractions.length >= 1 && poison.length >= 3,
      60_000,
      50,
    );
    await sleep(1000); // anything extra (a duplicate) would arrive now
    expect(records).toHaveLength(14);
    const byId = new Map(records.map((r) => [r.record.eventID, r]));
    expect(byId.size).toBe(14);
    for (const r of [...items, retracted, afterPoison]) expect(byId.get(r.eventID)?.record).toEqual(r);
    expect(byId.get(afterPoison.eventID)?.meta).toMatchObject({
      topic,
      table: TABLE,
      key: messageKey(TABLE, { pk: { S: 'item-1' } }),
    });

    expect(retractions).toEqual([
      expect.objectContaining({ retractsEventID: retracted.eventID, reason: 'condition-failed' }),
    ]);

    expect(poison.map((p) => p.err.reason).sort()).toEqual(
      [encoding === 'avro' ? 'unknown-schema' : 'undecodable', 'missing-headers', 'undecodable'].sort(),
    );
    expect(poison.find((p) => p.meta.key?.toString() === 'no-headers')?.meta.value?.toString()).toBe('{}');

    // Per item key, records arrive in publish order (one key, one partition).
    const item1 = records
      .filter((r) => r.record.dynamodb.Keys.pk?.S === 'item-1')
      .map((r) => r.record.dynamodb.SequenceNumber);
    expect(item1).toEqual([formatSequenceNumber(2), formatSequenceNumber(200)]);
  });

  it('commits only after the handler resolves: a failing handler gets the record again, a restart does not', async () => {
    const first = record('item-a', 1);
    const second = record('item-b', 2);
    await producer.send({
      topic,
      acks: -1,
      messages: [removeMessage(first, TABLE, { encoding }), removeMessage(second, TABLE, { encoding })],
    });

    const groupId = uniqueName('consumer-group');
    const attempts = new Map<string, number>();
    const done: string[] = [];
    const consumer = await consumeTtlStream({
      kafka,
      groupId,
      topics: [topic],
      fromBeginning: true,
      onRecord: async (r) => {
        const n = (attempts.get(r.eventID) ?? 0) + 1;
        attempts.set(r.eventID, n);
        if (r.eventID === first.eventID && n === 1) throw new Error('transient failure in the handler');
        done.push(r.eventID);
      },
    });
    running.push(consumer);
    await waitFor('both records handled', () => done.length >= 2, 60_000, 50);
    expect(attempts.get(first.eventID)).toBeGreaterThanOrEqual(2);
    expect(done.sort()).toEqual([first.eventID, second.eventID].sort());
    await consumer.stop();

    // Same group after a restart: committed records are not delivered again, new ones are.
    const third = record('item-c', 3);
    await producer.send({ topic, acks: -1, messages: [removeMessage(third, TABLE, { encoding })] });
    const again: string[] = [];
    running.push(
      await consumeTtlStream({
        kafka,
        groupId,
        topics: [topic],
        fromBeginning: true,
        onRecord: (r) => void again.push(r.eventID),
      }),
    );
    await waitFor('the new record', () => again.includes(third.eventID), 60_000, 50);
    await sleep(1000);
    expect(again).toEqual([third.eventID]);
  });
});
