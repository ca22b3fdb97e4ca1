import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { openArchiveStorage } from '../../../archive/storage';
import { metrics } from '../../../core/metrics';
import { createTestTopic, uniqueName } from '../../support/stack';
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

/**
 * A topic deleted and re-created under the same name starts again at offset 0, while the archive
 * (and perhaps the group) remembers the old topic's offsets. Archiving on would skip the new
 * records below the old end as "already archived", and could overwrite old files of the same
 * offset ranges. The archiver must refuse that partition, loudly, and touch nothing.
 */
describe('archiver: a topic re-created under the same name', () => {
  const suite = useArchiverSuite();
  const { kafka } = suite;

  it('refuses the partition (metric, error log), skips and overwrites nothing; a fresh archive takes the new records', async () => {
    const name = uniqueName('arch-lineage');
    const admin = suite.admin();
    const producer = suite.producer();
    const config = suite.configFor(name, { archive: { rollMs: 200 } });
    const topic = await createTestTopic(admin, config.topics.shared, 1);
    const storage = openArchiveStorage(config);
    const old = Array.from({ length: 30 }, (_, i) => makeRecord('orders', i, BASE + i));
    await produceAll(
      producer,
      topic,
      old.map((r) => removeMessage(r, 'orders')),
    );
    const first = await startArchiverFor(config, { kafka, storage, logger: pino({ level: 'silent' }) });
    try {
      await waitFor(
        'the old topic archived',
        async () => (await committedOffsets(admin, config.archive.groupId, topic)).get(0) === '30',
      );
    } finally {
      await first.stop();
    }
    const before = await readArchive(storage);
    expect(before.problems).toEqual([]);
    const beforeFiles = new Map<string, Buffer | null>();
    for await (const p of storage.list('')) beforeFiles.set(p, await storage.get(p));

    // Re-create the topic; the group's offsets go with it, the archive stays.
    await admin.deleteTopics({ topics: [topic] });
    await waitFor('the topic gone', async () => !(await admin.listTopics()).includes(topic));
    await waitFor('the topic re-created', async () => {
      try {
        await createTestTopic(admin, topic, 1);
        return true;
      } catch {
        return false; // still being deleted
      }
    });
    const fresh = Array.from({ length: 10 }, (_, i) => makeRecord('orders', 1000 + i, BASE + 3600 + i));
    await produceAll(
      producer,
      topic,
      fresh.map((r) => removeMessage(r, 'orders')),
    );

    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const second = await startArchiverFor(config, { kafka, storage, logger });
    try {
      await waitFor('the lineage alarm', async () => {
        const v = (await metrics.archiveLineageMismatch.get()).values.find((x) => x.labels.topic === topic);
        return v?.value === 1;
      });
      expect(lines.some((l) => l.level >= 50 && l.msg.startsWith('ARCHIVE LINEAGE'))).toBe(true);
      // Give a wrong archiver time to do damage: nothing may change, nothing may be committed.
      await sleep(2000);
      const committed = (await committedOffsets(admin, config.archive.groupId, topic)).get(0);
      expect(committed === undefined || committed === '-1' || committed === '0').toBe(true);
    } finally {
      await second.stop();
    }
    const afterFiles = new Map<string, Buffer | null>();
    for await (const p of storage.list('')) afterFiles.set(p, await storage.get(p));
    expect([...afterFiles.keys()].sort()).toEqual([...beforeFiles.keys()].sort());
    for (const [p, body] of afterFiles) expect(body?.equals(beforeFiles.get(p) as Buffer)).toBe(true);

    // The operator's way out: a new archive prefix. Every new record is archived, once.
    const moved = suite.configFor(name);
    const third = await startArchiverFor(
      { ...moved, archive: { ...moved.archive, groupId: config.archive.groupId } },
      { kafka, storage: openArchiveStorage(moved), logger: pino({ level: 'silent' }) },
    );
    try {
      await waitFor(
        'the new topic archived',
        async () => (await committedOffsets(admin, config.archive.groupId, topic)).get(0) === '10',
      );
    } finally {
      await third.stop();
    }
    const after = await readArchive(openArchiveStorage(moved));
    expect(after.problems).toEqual([]);
    const ids = countIds(after.rows);
    expect([...ids.keys()].sort()).toEqual(fresh.map((r) => r.eventID).sort());
    expect([...ids.values()].every((n) => n === 1)).toBe(true);
  });
});
