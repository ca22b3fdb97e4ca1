import type { Admin, Producer } from 'kafkajs';
import { openArchiveStorage, parseDataFilePath, decodeSegment } from '../../../archive/storage';
import { createS3Client } from '../../../core/clients';
import type { TtlstreamConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import { createTestBucket, createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { useArchiverSuite } from '../../support/archiver-suite';
import { waitFor } from '../../support/wait-for';
import {
  committedOffsets,
  countIds,
  highWatermarks,
  makeRecord,
  produceAll,
  readArchive,
  removeMessage,
  retractMessage,
} from '../../support/archive-fixture';
import { startArchiverFor } from '../../support/in-process-archiver';

const HOUR = 3600;
const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 30) / 1000); // 10:30 UTC

// Every record archived exactly once holds for both data-file formats (archive.format): the same suite, each format.
describe.each(['avro', 'parquet'] as const)('archiver: records flow to an archive of %s files', (format) => {
  const suite = useArchiverSuite();
  const { kafka } = suite;
  let admin: Admin;
  let producer: Producer;
  beforeAll(() => {
    admin = suite.admin();
    producer = suite.producer();
  });
  const fsArchive = (): string => `file://${suite.tempDir()}`;
  const configFor = (name: string, archiveUrl: string): TtlstreamConfig =>
    suite.configFor(name, {
      partitions: 3,
      archive: { url: archiveUrl, rollBytes: 64 * 1024, rollMs: 500, format },
    });

  it('archives every record of the shared topic to a file-system archive exactly once, per table and hour', async () => {
    const name = uniqueName(`arch-fs-${format}`);
    const config = configFor(name, fsArchive());
    const topic = await createTestTopic(admin, config.topics.shared, 3);
    const tables = ['orders', 'sessions.v2'];
    const records = Array.from({ length: 1500 }, (_, i) => {
      const table = tables[i % 2] as string;
      // Deletion times over three UTC hours.
      return { table, r: makeRecord(table, i, BASE + (i % 3) * HOUR + (i % 50)) };
    });
    const retracted = records.slice(0, 10);
    await produceAll(
      producer,
      topic,
      records.map(({ table, r }) => removeMessage(r, table)),
    );
    await produceAll(
      producer,
      topic,
      retracted.map(({ table, r }) => retractMessage(r, table, (BASE + 2 * HOUR) * 1000)),
    );

    const storage = openArchiveStorage(config);
    const archiver = await startArchiverFor(config, { kafka, storage, logger: silentLogger });
    try {
      await waitFor(
        'all rows archived',
        async () => (await readArchive(storage)).rows.length >= records.length + retracted.length,
      );
    } finally {
      await archiver.stop();
    }

    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    expect(ids.size).toBe(records.length);
    for (const { r } of records) expect(ids.get(r.eventID)).toBe(1);
    expect([...countIds(archive.rows, 'retract').keys()].sort()).toEqual(
      retracted.map(({ r }) => r.eventID).sort(),
    );

    // Layout: every file holds rows of one table and one UTC deletion hour, named for both.
    const files = archive.dataFiles.map((p) => ({ p, parsed: parseDataFilePath(p) }));
    expect(files.filter((f) => f.parsed?.format !== format)).toEqual([]);
    expect(new Set(files.map((f) => decodeSegment(f.parsed?.tableSegment ?? '')))).toEqual(new Set(tables));
    expect(new Set(files.map((f) => `${f.parsed?.date}T${f.parsed?.hour}`))).toEqual(
      new Set(['2024-05-01T10', '2024-05-01T11', '2024-05-01T12']),
    );
    for (const row of archive.rows) {
      const at =
        row.kind === 'remove'
          ? (row.record?.dynamodb.ApproximateCreationDateTime ?? 0) * 1000
          : (row.retraction?.retractedAt ?? 0);
      expect(row.table).toBe(tables.find((t) => t === row.table));
      expect(new Date(at).toISOString().slice(11, 13)).toMatch(/^1[012]$/);
    }

    // Offsets were committed only up to what is archived, and everything is archived.
    expect(await committedOffsets(admin, config.archive.groupId, topic)).toEqual(
      await highWatermarks(admin, topic),
    );
  });

  it('archives per-table topics to an S3 archive, including a topic created while running', async () => {
    const name = uniqueName(`arch-s3-${format}`);
    const s3Config = testConfig();
    const bucket = await createTestBucket(createS3Client(s3Config), name);
    const config = configFor(name, `s3://${bucket}/archive/root`);
    const first = await createTestTopic(admin, `${config.topics.perTablePrefix}orders`, 2);
    const storage = openArchiveStorage(config);
    const archiver = await startArchiverFor(config, {
      kafka,
      storage,
      logger: silentLogger,
      tuning: { topicRefreshMs: 500, monitorIntervalMs: 500 },
    });
    const a = Array.from({ length: 300 }, (_, i) => makeRecord('orders', i, BASE + i));
    const b = Array.from({ length: 300 }, (_, i) => makeRecord('users', i, BASE + i));
    try {
      await produceAll(
        producer,
        first,
        a.map((r) => removeMessage(r, 'orders')),
      );
      const second = await createTestTopic(admin, `${config.topics.perTablePrefix}users`, 2);
      await produceAll(
        producer,
        second,
        b.map((r) => removeMessage(r, 'users')),
      );
      await waitFor(
        'both topics archived',
        async () => (await readArchive(storage)).rows.length >= a.length + b.length,
        90_000,
      );
    } finally {
      await archiver.stop();
    }
    const archive = await readArchive(storage);
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    for (const r of [...a, ...b]) expect(ids.get(r.eventID)).toBe(1);
    expect(ids.size).toBe(a.length + b.length);
    expect(
      archive.dataFiles.every((p) => p.startsWith('table=orders/') || p.startsWith('table=users/')),
    ).toBe(true);
    expect(archive.dataFiles.every((p) => p.endsWith(`.${format}`))).toBe(true);
  });
});
