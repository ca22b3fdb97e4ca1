import type { Admin, Producer } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openArchiveStorage } from '../../../archive/storage';
import { silentLogger } from '../../../core/logger';
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

describe('archiver: several processes share the partitions', () => {
  const suite = useArchiverSuite();
  const { kafka } = suite;
  let admin: Admin;
  let producer: Producer;
  beforeAll(() => {
    admin = suite.admin();
    producer = suite.producer();
  });

  it('archives everything exactly once while members join and leave under load', async () => {
    const name = uniqueName('arch-rebal');
    const config = suite.configFor(name, { partitions: 4, archive: { rollBytes: 16 * 1024 } });
    const topic = await createTestTopic(admin, config.topics.shared, 4);
    const storage = openArchiveStorage(config);
    const options = { sessionTimeoutMs: 6000, heartbeatIntervalMs: 1000 };
    const records = Array.from({ length: 2400 }, (_, i) =>
      makeRecord(i % 3 ? 'orders' : 'users', i, BASE + i),
    );

    let produced = 0;
    const producing = (async () => {
      for (let i = 0; i < records.length; i += 100) {
        await produceAll(
          producer,
          topic,
          records.slice(i, i + 100).map((r, j) => removeMessage(r, (i + j) % 3 ? 'orders' : 'users')),
        );
        produced = i + 100;
        await sleep(100);
      }
    })();

    const running: Array<{ stop(): Promise<void> }> = [];
    try {
      const a = await startArchiverFor(config, { kafka, storage, logger: silentLogger, tuning: options });
      running.push(a);
      await waitFor('a third produced', async () => produced >= 800);
      running.push(await startArchiverFor(config, { kafka, storage, logger: silentLogger, tuning: options }));
      await waitFor('two thirds produced', async () => produced >= 1600);
      await a.stop(); // graceful leave: its partitions move to the others
      running.push(await startArchiverFor(config, { kafka, storage, logger: silentLogger, tuning: options }));
      await producing;
      await waitFor('everything committed', () => allCommitted(admin, config.archive.groupId, topic), 90_000);
    } finally {
      await producing.catch(() => undefined);
      await Promise.all(running.map((r) => r.stop()));
    }
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    const wrong = records
      .filter((r) => ids.get(r.eventID) !== 1)
      .map((r) => `${r.eventID}: ${ids.get(r.eventID) ?? 0}`);
    expect(wrong).toEqual([]);
    expect(ids.size).toBe(records.length);
  });
});
