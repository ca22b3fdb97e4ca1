import type { Admin, IHeaders, Kafka } from 'kafkajs';
import { compareVersions } from '../../../archive/catalog';
import { REPLAY_HEADER } from '../../../archiver';
import { replay } from '../../../archive-tools/replay';
import { createKafka } from '../../../core/clients';
import { NotFoundError, ValidationError } from '../../../core/errors';
import { decodeMessage, messageKey, type ArchivedRecord, type StreamRecord } from '../../../schemas';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { countRows, startRealArchive, type RealArchive } from '../../support/real-archive';
import { waitFor } from '../../support/wait-for';
import { removeRow, retractRow, streamMessage } from '../../support/archive-fixture';

const kafka: Kafka = createKafka(testConfig());
const HOUR = 3600;
const T1 = Math.floor(Date.UTC(2025, 0, 20, 8, 15) / 1000);

interface Consumed {
  key: string;
  partition: number;
  headers: IHeaders;
  record: StreamRecord;
}

/** Every message of `topic`, read by a fresh consumer group, once the topic holds `count` messages in all. */
async function consumeAll(admin: Admin, topic: string, count: number): Promise<Consumed[]> {
  const total = async (): Promise<number> =>
    (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  expect(await total()).toBe(count); // exactly what replay reported: nothing more, nothing less
  const consumer = kafka.consumer({ groupId: uniqueName('replay-check') });
  const out: Consumed[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message, partition }) => {
      const decoded = decodeMessage(message.value, message.headers ?? {});
      if (decoded.kind !== 'remove') throw new Error('replay published a retraction');
      out.push({
        key: message.key?.toString() ?? '',
        partition,
        headers: message.headers ?? {},
        record: decoded.record,
      });
    },
  });
  try {
    await waitFor(`${count} replayed messages`, async () => out.length >= count);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

function versionOf(r: StreamRecord): { deletedAtMs: number; sequenceNumber: string; eventID: string } {
  return {
    deletedAtMs: r.dynamodb.ApproximateCreationDateTime * 1000,
    sequenceNumber: r.dynamodb.SequenceNumber,
    eventID: r.eventID,
  };
}

describe.each(['fs', 's3'] as const)('replay from a %s archive', (kind) => {
  let archive: RealArchive;
  let admin: Admin;
  const table = `replay_${kind}_${Date.now().toString(36)}`;
  const k = (pk: string): { pk: { S: string } } => ({ pk: { S: pk } });
  // k1 deleted three times over three hours, k2 twice, k3 once and retracted, 150 others once each.
  const k1 = [0, HOUR, 2 * HOUR].map((dt, v) =>
    removeRow({ table, keys: k('k1'), image: { v: { N: String(v) } }, deletedAtS: T1 + dt }),
  );
  const k2 = [10, HOUR + 10].map((dt) => removeRow({ table, keys: k('k2'), deletedAtS: T1 + dt }));
  const k3 = removeRow({ table, keys: k('k3'), deletedAtS: T1 + 20 });
  const others = Array.from({ length: 150 }, (_, i) =>
    removeRow({
      table,
      keys: k(`o${i}`),
      image: { blob: { B: new Uint8Array([i, 1, 2]) } },
      deletedAtS: T1 + (i % 3) * HOUR + i,
    }),
  );
  // k4: two deletions in one second; the higher SequenceNumber reaches Kafka (and the archive) first.
  const k4 = [900_000_000n, 5n].map((seq) =>
    removeRow({ table, keys: k('k4'), deletedAtS: T1 + 30, sequenceNumber: seq }),
  );
  // Even indexes go out first (avro), odd ones after (json): k4[0] lands before k4[1].
  const removes: ArchivedRecord[] = [...k1, ...k2, k3, ...others, ...k4];
  const live = removes.filter((r) => r !== k3);
  const byId = new Map(removes.map((r) => [r.eventID, r.record as StreamRecord]));

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
    archive = await startRealArchive(kafka, kind);
    // Half avro, half json on the stream: the archive holds both the same way.
    await archive.archive(
      removes.filter((_, i) => i % 2 === 0),
      'avro',
    );
    await archive.archive(
      removes.filter((_, i) => i % 2 === 1),
      'json',
    );
    await archive.archive([retractRow(k3, (T1 + 3 * HOUR) * 1000)]);
  });

  afterAll(async () => {
    await archive.close();
    await admin.disconnect();
  });

  it('round trip: every non-retracted REMOVE of the window once, original eventIDs and images, in order per key', async () => {
    const topic = await createTestTopic(admin, uniqueName('replay-out'), 3);
    const progress: number[] = [];
    const result = await replay(
      { storage: archive.storage, kafka },
      {
        table,
        fromMs: T1 * 1000,
        toMs: (T1 + 3 * HOUR) * 1000,
        topic,
        encoding: 'avro',
        batchSize: 40,
        onProgress: (done) => progress.push(done),
      },
    );
    expect(result).toEqual({ published: live.length, skippedRetracted: 1 });
    expect(progress.at(-1)).toBe(live.length);

    const got = await consumeAll(admin, topic, live.length);
    expect(got.map((m) => m.record.eventID).sort()).toEqual(live.map((r) => r.eventID).sort());
    for (const m of got) {
      expect(m.record).toEqual(byId.get(m.record.eventID));
      expect(m.key).toBe(messageKey(table, m.record.dynamodb.Keys));
      expect(m.headers[REPLAY_HEADER]?.toString()).toBe('1');
    }
    // Per key (one key → one partition, consumed in partition order): deletion time, then SequenceNumber.
    const perKey = new Map<string, StreamRecord[]>();
    for (const m of got) perKey.set(m.key, [...(perKey.get(m.key) ?? []), m.record]);
    const k1Order = perKey.get(messageKey(table, k('k1')))?.map((r) => r.eventID);
    expect(k1Order).toEqual(k1.map((r) => r.eventID));
    const k4Order = perKey.get(messageKey(table, k('k4')))?.map((r) => r.eventID);
    expect(k4Order).toEqual([k4[1]?.eventID, k4[0]?.eventID]);
    for (const records of perKey.values()) {
      const sorted = [...records].sort((a, b) => compareVersions(versionOf(a), versionOf(b)));
      expect(records.map((r) => r.eventID)).toEqual(sorted.map((r) => r.eventID));
    }
  });

  it('a narrower window replays only its deletions; json encoding on request', async () => {
    const topic = await createTestTopic(admin, uniqueName('replay-out'), 2);
    const fromMs = (T1 + HOUR) * 1000;
    const toMs = (T1 + 2 * HOUR) * 1000;
    const want = live.filter((r) => {
      const at = (r.record?.dynamodb.ApproximateCreationDateTime ?? 0) * 1000;
      return at >= fromMs && at < toMs;
    });
    expect(want.length).toBeGreaterThan(10);
    const result = await replay(
      { storage: archive.storage, kafka },
      { table, fromMs, toMs, topic, encoding: 'json' },
    );
    expect(result).toEqual({ published: want.length, skippedRetracted: 0 });
    const got = await consumeAll(admin, topic, want.length);
    expect(got.map((m) => m.record.eventID).sort()).toEqual(want.map((r) => r.eventID).sort());
    expect(got.every((m) => m.headers['ttlstream-encoding']?.toString() === 'json')).toBe(true);
  });

  it('replayed into the stream topic, the running archiver does not archive the records again', async () => {
    const before = await countRows(archive.storage, table);
    const result = await replay(
      { storage: archive.storage, kafka },
      { table, fromMs: 0, toMs: (T1 + 10 * HOUR) * 1000, topic: archive.topic, encoding: 'avro' },
    );
    expect(result.published).toBe(live.length);
    // A fresh record after the replayed ones on every partition: once all are archived, the
    // archiver has passed the replayed messages.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sentinels = [0, 1, 2].map((p) => ({
      p,
      row: removeRow({ table, keys: k(`sentinel-${p}`), deletedAtS: T1 + 4 * HOUR }),
    }));
    await producer.send({
      topic: archive.topic,
      acks: -1,
      messages: sentinels.map(({ p, row }) => ({ ...streamMessage(row, 'avro'), partition: p })),
    });
    await producer.disconnect();
    await waitFor('sentinels archived', async () => (await countRows(archive.storage, table)) >= before + 3);
    expect(await countRows(archive.storage, table)).toBe(before + 3);
  });

  it('refuses a missing topic and bad options', async () => {
    const base = { table, fromMs: 0, toMs: 1, encoding: 'avro' as const };
    await expect(
      replay({ storage: archive.storage, kafka }, { ...base, topic: uniqueName('nope') }),
    ).rejects.toThrow(NotFoundError);
    await expect(
      replay({ storage: archive.storage, kafka }, { ...base, topic: 'x', fromMs: 5, toMs: 1 }),
    ).rejects.toThrow(ValidationError);
    await expect(
      replay({ storage: archive.storage, kafka }, { ...base, topic: 'bad topic name' }),
    ).rejects.toThrow(/topic/);
  });
});
