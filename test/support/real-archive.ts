import type { Kafka } from 'kafkajs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningArchiver } from '../../archiver';
import { openCatalog } from '../../archive/catalog';
import { openArchiveStorage, type ArchiveStorage, type DataFormat } from '../../archive/storage';
import { createS3Client } from '../../core/clients';
import type { TtlstreamConfig } from '../../core/config';
import { silentLogger } from '../../core/logger';
import type { ArchivedRecord, Encoding } from '../../schemas';
import { createTestBucket, createTestTopic, testConfig, uniqueName } from './stack';
import { streamMessage } from './archive-fixture';
import { waitFor } from './wait-for';
import { startArchiverFor } from './in-process-archiver';

/**
 * A real archive for restore/replay tests: records are produced to a fresh stream topic and the
 * real archiver (consumer group, rolls, key indexes, manifests) writes them to a file-system or S3
 * archive, in either data-file format (archive.format). Rows are built with `removeRow`/`retractRow` of test/support/archive-fixture.ts, whose bodies
 * are contract-valid stream records.
 */
export interface RealArchive {
  config: TtlstreamConfig;
  storage: ArchiveStorage;
  topic: string;
  /** Produce the rows' messages to the stream topic and wait until the catalog shows every one. */
  archive(rows: ArchivedRecord[], encoding?: Encoding): Promise<void>;
  /** The archiver, while running (replay tests use it to prove replayed records are skipped). */
  archiver: RunningArchiver;
  close(): Promise<void>;
}

export async function countRows(storage: ArchiveStorage, table: string): Promise<number> {
  let n = 0;
  for await (const _ of openCatalog(storage).scan(table)) n++;
  return n;
}

export async function startRealArchive(
  kafka: Kafka,
  kind: 'fs' | 's3',
  format: DataFormat = 'avro',
): Promise<RealArchive> {
  const name = uniqueName(`rst-${kind}-${format}`);
  let dir: string | undefined;
  let url: string;
  if (kind === 'fs') {
    dir = await mkdtemp(join(tmpdir(), 'ttlstream-restore-'));
    url = `file://${dir}`;
  } else {
    const s3 = createS3Client(testConfig());
    url = `s3://${await createTestBucket(s3, name)}/archive`;
    s3.destroy();
  }
  const config = testConfig({
    topics: {
      shared: `${name}.shared`,
      perTablePrefix: `${name}.t.`,
      deadLetter: `${name}.dlq`,
      partitions: 3,
    },
    archive: { url, groupId: `${name}-archiver`, rollMs: 300, format },
  });
  const admin = kafka.admin();
  await admin.connect();
  const topic = await createTestTopic(admin, config.topics.shared, 3);
  await admin.disconnect();
  const storage = openArchiveStorage(config);
  const archiver = await startArchiverFor(config, {
    kafka,
    storage,
    logger: silentLogger,
    tuning: { monitorIntervalMs: 500 },
  });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  return {
    config,
    storage,
    topic,
    archiver,
    async archive(rows, encoding = 'avro') {
      const tables = [...new Set(rows.map((r) => r.table))];
      const before = new Map<string, number>();
      for (const t of tables) before.set(t, await countRows(storage, t));
      await producer.send({ topic, acks: -1, messages: rows.map((r) => streamMessage(r, encoding)) });
      for (const t of tables) {
        const want = (before.get(t) ?? 0) + rows.filter((r) => r.table === t).length;
        await waitFor(`${want} rows of ${t} archived`, async () => (await countRows(storage, t)) >= want);
      }
    },
    async close() {
      await producer.disconnect();
      await archiver.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
