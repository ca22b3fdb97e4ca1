import { openArchiveStorage } from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import { silentLogger } from '../../../core/logger';
import { createTestTopic, uniqueName } from '../../support/stack';
import { useArchiverSuite } from '../../support/archiver-suite';
import { waitFor } from '../../support/wait-for';
import { allCommitted, makeRecord, produceAll, removeMessage } from '../../support/archive-fixture';
import { startArchiverFor } from '../../support/in-process-archiver';

/** The archiver's own retention schedule, wired through startArchiver and the TTL settings lookup. */

const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

describe('archiver: scheduled retention purge', () => {
  const suite = useArchiverSuite();

  it('archives records, then removes the files past archive.retentionDays, and the archive verifies', async () => {
    const name = uniqueName('arch-purge');
    const config = suite.configFor(name, {
      partitions: 2,
      archive: { retentionDays: 5, purgeIntervalMs: 300 },
    });
    const topic = await createTestTopic(suite.admin(), config.topics.shared, 2);
    const storage = openArchiveStorage(config);
    // Deleted in May 2024: long past a 5-day retention, so every file is due as soon as it is written.
    const records = Array.from({ length: 200 }, (_, i) => makeRecord('orders', i, BASE + i * 60));
    const archiver = await startArchiverFor(config, { kafka: suite.kafka, storage, logger: silentLogger });
    try {
      await produceAll(
        suite.producer(),
        topic,
        records.map((r) => removeMessage(r, 'orders')),
      );
      await waitFor('everything archived', () => allCommitted(suite.admin(), config.archive.groupId, topic));
      await waitFor('every archived file purged', async () => {
        const r = await verifyArchive(storage);
        return r.files > 0 && r.purged === r.files;
      });
    } finally {
      await archiver.stop();
    }
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.rows).toBe(0);
    const left: string[] = [];
    for await (const p of storage.list('table=')) left.push(p);
    expect(left).toEqual([]);
    const purges: string[] = [];
    for await (const p of storage.list('_purge/')) purges.push(p);
    expect(purges).toHaveLength(report.purged);
  });
});
