import type { Admin, Producer } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { acknowledgeLoss } from '../../../archive-tools/loss-ack';
import { LossRecordSchema, openArchiveStorage, parseArchiveJson } from '../../../archive/storage';
import type { TtlstreamConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { createTestTopic, uniqueName } from '../../support/stack';
import { capturingLogger } from '../../support/logger';
import { useArchiverSuite } from '../../support/archiver-suite';
import { waitFor } from '../../support/wait-for';
import {
  committedOffsets,
  countIds,
  makeRecord,
  produceAll,
  readArchive,
  removeMessage,
} from '../../support/archive-fixture';
import { startArchiverFor } from '../../support/in-process-archiver';

const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

async function gaugeValue(
  gauge: typeof metrics.archiveLoss,
  topic: string,
  partition = '0',
): Promise<number | undefined> {
  return (await gauge.get()).values.find((v) => v.labels.topic === topic && v.labels.partition === partition)
    ?.value;
}

describe('archiver: the 24-hour window', () => {
  const suite = useArchiverSuite();
  const { kafka } = suite;
  let admin: Admin;
  let producer: Producer;
  beforeAll(() => {
    admin = suite.admin();
    producer = suite.producer();
  });
  const configFor = (name: string, archive: Partial<TtlstreamConfig['archive']> = {}): TtlstreamConfig =>
    suite.configFor(name, { archive: { rollMs: 200, ...archive } });

  it('reports LOSS loudly and durably when records age out of Kafka before the archiver has them', async () => {
    const name = uniqueName('arch-loss');
    const config = configFor(name);
    // The broker deletes closed segments older than a second (it checks every few seconds).
    const topic = await createTestTopic(admin, config.topics.shared, 1, [
      { name: 'retention.ms', value: '1000' },
      { name: 'segment.ms', value: '500' },
    ]);
    const storage = openArchiveStorage(config);

    const batch1 = Array.from({ length: 20 }, (_, i) => makeRecord('orders', i, BASE + i));
    await produceAll(
      producer,
      topic,
      batch1.map((r) => removeMessage(r, 'orders')),
    );
    const first = await startArchiverFor(config, { kafka, storage, logger: silentLogger });
    try {
      await waitFor(
        'batch 1 committed',
        async () => (await committedOffsets(admin, config.archive.groupId, topic)).get(0) === '20',
      );
    } finally {
      await first.stop();
    }

    // While no archiver runs: more records, then keep appending so segments close and age out,
    // until the low watermark has passed the archiver's position (20).
    const batch2 = Array.from({ length: 20 }, (_, i) => makeRecord('orders', 100 + i, BASE + i));
    await produceAll(
      producer,
      topic,
      batch2.map((r) => removeMessage(r, 'orders')),
    );
    let filler = 0;
    const low = await waitFor(
      'retention to delete unarchived records',
      async () => {
        await sleep(700);
        await produceAll(producer, topic, [
          removeMessage(makeRecord('orders', 1000 + filler++, BASE), 'orders'),
        ]);
        const wm = (await admin.fetchTopicOffsets(topic)).find((o) => o.partition === 0);
        return wm && BigInt(wm.low) > 40n ? BigInt(wm.low) : undefined;
      },
      90_000,
      0,
    );

    const { logger, lines } = capturingLogger('info');
    const second = await startArchiverFor(config, {
      kafka,
      storage,
      logger,
      tuning: { monitorIntervalMs: 300 },
    });
    try {
      await waitFor('loss recorded', async () => (await gaugeValue(metrics.archiveLoss, topic)) === 1);
      const lossLine = await waitFor('loss logged', async () =>
        lines.find((l) => l.msg.startsWith('ARCHIVE LOSS')),
      );
      expect(lossLine.level).toBe(50); // error
      expect(lossLine).toMatchObject({ topic, partition: 0, from: '20' });
      expect(BigInt(lossLine.to as string)).toBeGreaterThanOrEqual(39n);
      // It goes on archiving what is still there.
      const batch3 = Array.from({ length: 10 }, (_, i) => makeRecord('orders', 500 + i, BASE + i));
      await produceAll(
        producer,
        topic,
        batch3.map((r) => removeMessage(r, 'orders')),
      );
      await waitFor('batch 3 archived', async () => {
        const ids = countIds((await readArchive(storage)).rows);
        return batch3.every((r) => ids.get(r.eventID) === 1);
      });
    } finally {
      await second.stop();
    }
    const lossFiles: string[] = [];
    for await (const p of storage.list('_loss/')) lossFiles.push(p);
    expect(lossFiles.length).toBeGreaterThanOrEqual(1);
    const loss = parseArchiveJson(
      LossRecordSchema,
      (await storage.get(lossFiles[0] as string)) as Buffer,
      lossFiles[0] as string,
    );
    expect(loss).toMatchObject({ topic, partition: 0, from: '20', detectedBy: 'assignment' });
    expect(BigInt(loss.to)).toBeGreaterThanOrEqual(low - 1n);
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    for (const r of batch1) expect(ids.get(r.eventID)).toBe(1);
  });

  it('keeps the loss alert until acknowledged, across a restart, and fires it again for a later loss', async () => {
    const config = configFor(uniqueName('arch-ack'));
    const topic = await createTestTopic(admin, config.topics.shared, 1);
    const storage = openArchiveStorage(config);
    const produce = (from: number, n: number) =>
      produceAll(
        producer,
        topic,
        Array.from({ length: n }, (_, i) =>
          removeMessage(makeRecord('orders', from + i, BASE + i), 'orders'),
        ),
      );
    const start = () =>
      startArchiverFor(config, { kafka, storage, logger: silentLogger, tuning: { monitorIntervalMs: 300 } });
    const lossGauge = () => gaugeValue(metrics.archiveLoss, topic);
    const committed = async () => (await committedOffsets(admin, config.archive.groupId, topic)).get(0);

    // Ten records, the group at offset 0, Kafka's log starting at 5 (records deleted, as retention would): the
    // archiver finds 0-4 lost when it is assigned the partition, and archives 5-9.
    await produce(0, 10);
    await admin.setOffsets({
      groupId: config.archive.groupId,
      topic,
      partitions: [{ partition: 0, offset: '0' }],
    });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] });
    let archiver = await start();
    try {
      await waitFor('the loss alerted', async () => (await lossGauge()) === 1);
      await waitFor('5-9 archived', async () => (await committed()) === '10');
      const ack = await acknowledgeLoss(storage, { topic, actor: 'cli:test', dryRun: false });
      expect(ack.acks.map((a) => [a.ack.partition, a.ack.through, a.ack.losses.length])).toEqual([
        [0, '4', 1],
      ]);
      // Read back from the archive at the archiver's next refresh: no restart, no other signal.
      await waitFor('the loss acknowledged', async () => (await lossGauge()) === 0);
    } finally {
      await archiver.stop();
    }

    // A new process knows of the loss only from the archive: acknowledged, so 0, not 1 and not absent.
    metrics.archiveLoss.reset();
    archiver = await start();
    try {
      await waitFor('the acknowledged loss read back', async () => (await lossGauge()) === 0);
    } finally {
      await archiver.stop();
    }

    // While no archiver runs, ten more records of which Kafka drops the first five: a new loss, 10-14.
    metrics.archiveLoss.reset();
    await produce(100, 10);
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '15' }] });
    archiver = await start();
    try {
      await waitFor(
        'the later loss alerted despite the acknowledgement',
        async () => (await lossGauge()) === 1,
      );
      const again = await acknowledgeLoss(storage, { topic, actor: 'cli:test', dryRun: false });
      expect(again.acks.map((a) => [a.ack.through, a.ack.losses.map((l) => `${l.from}-${l.to}`)])).toEqual([
        ['14', ['10-14']],
      ]);
      await waitFor('the later loss acknowledged', async () => (await lossGauge()) === 0);
    } finally {
      await archiver.stop();
    }
  });

  it('alerts when the oldest unarchived record is older than archive.lagAlertMs', async () => {
    const name = uniqueName('arch-lag');
    // Rolls that would only happen after a minute: records wait in the buffer.
    const config = configFor(name, { rollMs: 60_000, rollBytes: 64 * 1024 * 1024, lagAlertMs: 1000 });
    const topic = await createTestTopic(admin, config.topics.shared, 1);
    const { logger, lines } = capturingLogger('info');
    const archiver = await startArchiverFor(config, {
      kafka,
      storage: openArchiveStorage(config),
      logger,
      tuning: { monitorIntervalMs: 300 },
    });
    try {
      await produceAll(
        producer,
        topic,
        Array.from({ length: 5 }, (_, i) => removeMessage(makeRecord('orders', i, BASE), 'orders')),
      );
      const alert = await waitFor(
        'lag alert',
        async () => lines.find((l) => l.msg.startsWith('ARCHIVE LAG')),
        30_000,
      );
      expect(alert.level).toBe(50);
      expect(alert).toMatchObject({ topic, partition: 0, recordsBehind: '5' });
      expect(await gaugeValue(metrics.recordsBehind, topic)).toBe(5);
      expect(await gaugeValue(metrics.oldestUnarchivedSeconds, topic)).toBeGreaterThan(1);
    } finally {
      await archiver.stop();
    }
    // The graceful stop rolled the buffer.
    expect((await committedOffsets(admin, config.archive.groupId, topic)).get(0)).toBe('5');
  });
});
