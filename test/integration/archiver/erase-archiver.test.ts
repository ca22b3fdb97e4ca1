import type { Admin, Producer } from 'kafkajs';
import { replay } from '../../../archive-tools/replay';
import { restore } from '../../../archive-tools/restore';
import { openArchiveStorage } from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import { createDynamoClient, createS3Client } from '../../../core/clients';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { messageKey } from '../../../schemas';
import {
  createTestBucket,
  createTestTable,
  createTestTopic,
  deleteTestTable,
  testConfig,
  uniqueName,
} from '../../support/stack';
import { runCli } from '../../support/cli-process';
import { SUBJECT, SUBJECT_JSON } from './erase-fixtures.support';
import { useArchiverSuite } from '../../support/archiver-suite';
import { waitFor } from '../../support/wait-for';
import {
  countIds,
  makeRecord,
  produceAll,
  readArchive,
  removeMessage,
  withKeys,
} from '../../support/archive-fixture';
import { startArchiverFor } from '../../support/in-process-archiver';

/**
 * An erased key stays erased while the pipeline runs: a REMOVE of the key published after the
 * erasure is left out of the archiver's next roll (and counted), and restore and replay of the
 * archive never bring the key back.
 */

const T0 = Math.floor(Date.UTC(2025, 2, 3, 9, 0) / 1000);

async function dropped(topic: string): Promise<number> {
  const values = (await metrics.archiveErasedDropped.get()).values;
  return values.find((v) => v.labels.topic === topic && v.labels.table === 'users')?.value ?? 0;
}

describe.each(['fs', 's3'] as const)('erasure and the running archiver (%s)', (backend) => {
  const suite = useArchiverSuite();
  let admin: Admin;
  let producer: Producer;
  beforeAll(() => {
    admin = suite.admin();
    producer = suite.producer();
  });

  it('drops a record of an erased key archived after the erasure; restore and replay never return the key', async () => {
    const name = uniqueName(`erase-run-${backend}`);
    const url =
      backend === 's3' ? `s3://${await createTestBucket(createS3Client(testConfig()), name)}/a` : undefined;
    const config = suite.configFor(name, { archive: { ...(url ? { url } : {}), rollMs: 300 } });
    const topic = await createTestTopic(admin, config.topics.shared, 1);
    const storage = openArchiveStorage(config);
    const before = Array.from({ length: 10 }, (_, i) => {
      const r = makeRecord('users', i, T0 + i * 60, 100);
      return i === 3 || i === 6 ? withKeys(r, SUBJECT) : r;
    });
    const after = [100, 101, 102].map((i) => {
      const r = makeRecord('users', i, T0 + i * 60, 100);
      return i === 101 ? withKeys(r, SUBJECT) : r;
    });
    // Published once a roll has re-read the ledger: dropped at classification, not only at the roll.
    const later = [103, 104].map((i) => {
      const r = makeRecord('users', i, T0 + i * 60, 100);
      return i === 103 ? withKeys(r, SUBJECT) : r;
    });
    const subjectIds = [...before, ...after, ...later]
      .filter((r) => r.dynamodb.Keys.pk?.S === 'subject-42')
      .map((r) => r.eventID);
    expect(subjectIds).toHaveLength(4);

    const archiver = await startArchiverFor(config, { kafka: suite.kafka, storage, logger: silentLogger });
    try {
      await produceAll(
        producer,
        topic,
        before.map((r) => removeMessage(r, 'users')),
      );
      await waitFor('the first records archived', async () => (await readArchive(storage)).rows.length >= 10);

      const erased = await runCli(
        [
          'archive',
          'erase',
          '--archive',
          config.archive.url,
          '--table',
          'users',
          '--key',
          SUBJECT_JSON,
          '--json',
        ],
        {},
      );
      expect(erased.code).toBe(0);
      expect(JSON.parse(erased.stdout)).toMatchObject({ rowsRemoved: 2 });

      await produceAll(
        producer,
        topic,
        after.map((r) => removeMessage(r, 'users')),
      );
      await waitFor('the later records of other keys archived', async () => {
        const ids = countIds((await readArchive(storage)).rows);
        return ids.has(after[0]?.eventID ?? '') && ids.has(after[2]?.eventID ?? '');
      });
      await produceAll(
        producer,
        topic,
        later.map((r) => removeMessage(r, 'users')),
      );
      await waitFor('the last record of another key archived', async () =>
        countIds((await readArchive(storage)).rows).has(later[1]?.eventID ?? ''),
      );
    } finally {
      await archiver.stop();
    }
    expect(await dropped(topic)).toBe(2);

    const ids = countIds((await readArchive(storage)).rows);
    expect(subjectIds.filter((id) => ids.has(id))).toEqual([]);
    expect(ids.size).toBe(11);
    expect((await verifyArchive(storage)).findings).toEqual([]);

    // Replay re-publishes every other record of the table, none of the key.
    const replayTopic = await createTestTopic(admin, `${name}.replay`, 1);
    const replayed = await replay(
      { storage, kafka: suite.kafka, logger: silentLogger },
      {
        table: 'users',
        topic: replayTopic,
        fromMs: (T0 - 3600) * 1000,
        toMs: (T0 + 3 * 3600) * 1000,
        encoding: 'avro',
      },
    );
    expect(replayed.published).toBe(11);
    const consumer = suite.kafka.consumer({ groupId: `${name}-check` });
    const keys: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: replayTopic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void keys.push(message.key?.toString() ?? '') });
    try {
      await waitFor('replayed messages read', async () => keys.length >= 11);
    } finally {
      await consumer.disconnect();
    }
    expect(keys).not.toContain(messageKey('users', SUBJECT));

    // Restore finds nothing of the key; another key of the same archive comes back.
    const ddb = createDynamoClient(testConfig());
    const table = await createTestTable(ddb, name, { hashKey: 'pk', rangeKey: 'sk', rangeType: 'N' });
    try {
      const deps = { storage, ddb, logger: silentLogger };
      const none = await restore(deps, {
        table: 'users',
        targetTable: table,
        key: SUBJECT_JSON,
        ttl: 'keep',
      });
      expect(none).toMatchObject({ restored: 0, skippedPresent: 0, skippedRetracted: 0 });
      const other = await restore(deps, {
        table: 'users',
        targetTable: table,
        key: JSON.stringify(before[0]?.dynamodb.Keys),
        ttl: 'keep',
      });
      expect(other.restored).toBe(1);
    } finally {
      await deleteTestTable(ddb, table);
      ddb.destroy();
    }
  });
});
