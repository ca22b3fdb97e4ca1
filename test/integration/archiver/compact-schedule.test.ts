import { openArchiveStorage, parseDataFilePath } from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { allCommitted, makeRecord, produceAll, removeMessage } from '../../support/archive-fixture';
import { useArchiverSuite } from '../../support/archiver-suite';
import { catalogCounts, folderCounts, notOnce } from '../../support/compaction';
import { startArchiverFor } from '../../support/in-process-archiver';
import { createTestTopic, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';

/**
 * The archiver's own compaction schedule, wired through startArchiver: it compacts the closed hours it is still
 * writing rolls into (records deleted long ago arrive while it runs), so compactions and late rolls interleave with
 * the archiver's writes, and every record still ends in the archive once.
 */

const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

describe('archiver: scheduled compaction', () => {
  const suite = useArchiverSuite();

  it('compacts the hours it archives while it archives them; every record once, the archive verifies', async () => {
    const name = uniqueName('arch-compact');
    const config = suite.configFor(name, { partitions: 2, archive: { compactIntervalMs: 300 } });
    const topic = await createTestTopic(suite.admin(), config.topics.shared, 2);
    const storage = openArchiveStorage(config);
    // Four hours of May 2024: closed long before archive.compactAfterMs (2 h), so due as soon as written.
    const records = Array.from({ length: 200 }, (_, i) => makeRecord('orders', i, BASE + i * 72));
    const ids = records.map((r) => r.eventID);
    const archiver = await startArchiverFor(config, { kafka: suite.kafka, storage, logger: silentLogger });
    try {
      // In two waves, so some rolls of an hour land after the hour was compacted.
      const messages = records.map((r) => removeMessage(r, 'orders'));
      await produceAll(suite.producer(), topic, messages.slice(0, 100));
      await waitFor('a first compaction', async () => (await compactedFiles(storage)) > 0);
      await produceAll(suite.producer(), topic, messages.slice(100));
      await waitFor('everything archived', () => allCommitted(suite.admin(), config.archive.groupId, topic));
      await waitFor('no roll file left, no compaction in progress', async () => {
        const r = await verifyArchive(storage);
        return r.compactInProgress.length === 0 && (await rollFiles(storage)) === 0;
      });
      await waitFor('the lag gauge at 0', async () => (await lag()) === 0);
    } finally {
      await archiver.stop();
    }
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report).toMatchObject({ rows: ids.length, compactInProgress: [] });
    expect(report.compacted).toBeGreaterThan(0);
    expect(notOnce(ids, await catalogCounts(storage))).toEqual([]);
    expect(notOnce(ids, await folderCounts(storage))).toEqual([]);
  });
});

async function ordersDataFiles(storage: ReturnType<typeof openArchiveStorage>): Promise<string[]> {
  const out: string[] = [];
  for await (const p of storage.list('table=orders/')) if (parseDataFilePath(p)) out.push(p);
  return out;
}

async function compactedFiles(storage: ReturnType<typeof openArchiveStorage>): Promise<number> {
  return (await ordersDataFiles(storage)).filter((p) => parseDataFilePath(p)?.compaction).length;
}

async function rollFiles(storage: ReturnType<typeof openArchiveStorage>): Promise<number> {
  return (await ordersDataFiles(storage)).filter((p) => !parseDataFilePath(p)?.compaction).length;
}

async function lag(): Promise<number | undefined> {
  return (await metrics.archiveCompactionLag.get()).values[0]?.value;
}
