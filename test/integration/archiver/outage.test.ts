import type { Admin, Producer } from 'kafkajs';
import { openArchiveStorage } from '../../../archive/storage';
import { createS3Client } from '../../../core/clients';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { createTestBucket, createTestTopic, stackCtl, testConfig, uniqueName } from '../../support/stack';
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

/** Restarts of the real services under a running archiver: nothing lost, nothing archived twice. */

const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

describe('archiver: service restarts', () => {
  const suite = useArchiverSuite();
  const { kafka } = suite;
  let admin: Admin;
  let producer: Producer;
  beforeAll(() => {
    admin = suite.admin();
    producer = suite.producer();
  });

  it('survives a Kafka restart in the middle of archiving', async () => {
    const name = uniqueName('arch-kafka');
    const config = suite.configFor(name, { partitions: 3, archive: { rollBytes: 16 * 1024 } });
    const topic = await createTestTopic(admin, config.topics.shared, 3);
    const storage = openArchiveStorage(config);
    const records = Array.from({ length: 900 }, (_, i) => makeRecord('orders', i, BASE + i));
    const archiver = await startArchiverFor(config, {
      kafka,
      storage,
      logger: silentLogger,
      tuning: { sessionTimeoutMs: 6000 },
    });
    try {
      await produceAll(
        producer,
        topic,
        records.slice(0, 450).map((r) => removeMessage(r, 'orders')),
      );
      await waitFor('first half archived', () => allCommitted(admin, config.archive.groupId, topic));
      await stackCtl('restart', 'kafka');
      await produceAll(
        producer,
        topic,
        records.slice(450).map((r) => removeMessage(r, 'orders')),
      );
      await waitFor(
        'second half archived',
        () => allCommitted(admin, config.archive.groupId, topic),
        120_000,
        500,
      );
    } finally {
      await archiver.stop();
    }
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    expect(records.filter((r) => ids.get(r.eventID) !== 1)).toEqual([]);
    expect(ids.size).toBe(records.length);
  });

  it('keeps offsets uncommitted while S3 is down and archives everything once it is back', async () => {
    const name = uniqueName('arch-s3down');
    const bucket = await createTestBucket(createS3Client(testConfig()), name);
    const config = suite.configFor(name, {
      partitions: 2,
      archive: { url: `s3://${bucket}/a`, rollBytes: 16 * 1024 },
    });
    const topic = await createTestTopic(admin, config.topics.shared, 2);
    const storage = openArchiveStorage(config);
    const records = Array.from({ length: 400 }, (_, i) => makeRecord('orders', i, BASE + i));
    const errorsBefore = (await metrics.archiveRollErrors.get()).values.reduce((n, v) => n + v.value, 0);
    const archiver = await startArchiverFor(config, { kafka, storage, logger: silentLogger });
    try {
      await produceAll(
        producer,
        topic,
        records.slice(0, 100).map((r) => removeMessage(r, 'orders')),
      );
      await waitFor('first part archived', () => allCommitted(admin, config.archive.groupId, topic));
      await stackCtl('stop', 's3');
      try {
        await produceAll(
          producer,
          topic,
          records.slice(100).map((r) => removeMessage(r, 'orders')),
        );
        await waitFor('failed roll attempts', async () => {
          const errors = (await metrics.archiveRollErrors.get()).values.reduce((n, v) => n + v.value, 0);
          return errors > errorsBefore;
        });
        expect(await allCommitted(admin, config.archive.groupId, topic)).toBe(false);
      } finally {
        await stackCtl('start', 's3');
      }
      await waitFor(
        'everything archived',
        () => allCommitted(admin, config.archive.groupId, topic),
        120_000,
        500,
      );
    } finally {
      await archiver.stop();
    }
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    expect(records.filter((r) => ids.get(r.eventID) !== 1)).toEqual([]);
  });
});
