import { BatchWriteItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { RunningArchiver } from '../../../archiver';
import { openCatalog } from '../../../archive/catalog';
import { decodeDataFile } from '../../../archive/format';
import { openArchiveStorage, type ArchiveStorage } from '../../../archive/storage';
import { createDynamoClient, createKafka, createS3Client } from '../../../core/clients';
import type { TtlstreamConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import { toJsonMap, type ArchivedRecord } from '../../../schemas';
import { ROOT_DIR, runDir } from '../../support/ports';
import {
  createTestBucket,
  createTestTable,
  createTestTopic,
  deleteTestTable,
  scanTable,
  testConfig,
  uniqueName,
} from '../../support/stack';
import { waitFor } from '../../support/wait-for';
import { runCli, spawnCli } from '../../support/cli-process';
import { startArchiverFor } from '../../support/in-process-archiver';

type Item = Record<string, AttributeValue>;

/**
 * The Parquet archive end to end, and read by the tools other teams use (docs/archive-columns.md). One run of the
 * whole pipeline (`ttlstream run`, archive.format parquet, an s3:// archive) deletes items of every AttributeValue
 * type while an Avro archiver in another group archives the same topic. Then:
 * - every deletion is in both archives once, `archive verify` passes, and `restore` puts back byte-identical items;
 * - DuckDB (`ttlstream archive query`), pyarrow and Apache Spark in local mode (through s3a, as an EMR or Glue job
 *   would) each read every Parquet file and find exactly the deletions the Avro archive holds, attribute for
 *   attribute; Spark also through the table `archive ddl --engine spark` creates, which reads the partition folders whole
 *   (no `pathGlobFilter`: the key indexes are under `_index/`). pyarrow and pyspark come from scripts/ensure-parquet-readers.sh (made once per machine; CI prepares
 *   it in its background set-up).
 */

const EXPIRED = 36;
const KEPT = 4;
const exec = promisify(execFile);
const READERS = resolve(runDir(), 'parquet-readers');
const READ_SCRIPT = resolve(ROOT_DIR, 'test', 'readers', 'read_archive.py');

/** Item i: every AttributeValue type, with spellings and bytes a lossy copy would change. */
function itemOf(i: number, exp: number): Item {
  return {
    pk: { S: `user#${i}` },
    sk: { N: String(i % 3) },
    exp: { N: String(exp) },
    s: { S: `héllo "quoted" \u2028 ${'✓'.repeat(i % 4)} ${i}` },
    big: { N: '12345678901234567890.123456789012345678' },
    small: { N: `-0.00000${i + 1}` },
    b: { B: Uint8Array.from([0, 255, i, 10, 13]) },
    ss: { SS: [`z${i}`, 'a', 'm'] },
    ns: { NS: ['10', '-0.5', String(i * 1000 + 1)] },
    bs: { BS: [Uint8Array.from([1]), Uint8Array.from([2, 3, i])] },
    m: {
      M: {
        inner: { M: { deep: { L: [{ S: 'x' }, { N: '2.50' }, { NULL: true }, { BOOL: false }] } } },
        tags: { SS: ['t1'] },
      },
    },
    l: { L: [{ SS: ['q'] }, { B: Uint8Array.from([9, i]) }, { M: { k: { N: String(i) } } }] },
    nul: { NULL: true },
    bool: { BOOL: i % 2 === 0 },
  };
}

/** An AttributeValue as plain JSON, independently of the archive's own writer: the `item` column's meaning. */
function plainOf(v: AttributeValue): unknown {
  if (v.S !== undefined) return v.S;
  if (v.N !== undefined) return Number(v.N);
  if (v.B !== undefined) return Buffer.from(v.B).toString('base64');
  if (v.SS !== undefined) return v.SS;
  if (v.NS !== undefined) return v.NS.map(Number);
  if (v.BS !== undefined) return v.BS.map((b) => Buffer.from(b).toString('base64'));
  if (v.M !== undefined) return Object.fromEntries(Object.entries(v.M).map(([k, x]) => [k, plainOf(x)]));
  if (v.L !== undefined) return v.L.map(plainOf);
  if (v.NULL !== undefined) return null;
  return v.BOOL;
}

/** The row a reader must find for an archived REMOVE, in the readers' common JSON form. */
function expectedRow(r: ArchivedRecord): Record<string, unknown> {
  const rec = r.record;
  if (!rec) throw new Error(`${r.eventID}: the end-to-end run archived a retraction`);
  const d = rec.dynamodb;
  const at = new Date(d.ApproximateCreationDateTime * 1000).toISOString();
  return {
    event_id: r.eventID,
    event_name: 'REMOVE',
    table_name: r.table,
    table: r.table,
    date: at.slice(0, 10),
    hour: at.slice(11, 13),
    key_pk: d.Keys.pk?.S,
    key_sk: Number(d.Keys.sk?.N),
    deleted_at: d.ApproximateCreationDateTime * 1000,
    expired_at: Number(d.OldImage.exp?.N) * 1000,
    ttl_mode: 'dynamodb',
    user_identity_type: 'Service',
    principal_id: 'dynamodb.amazonaws.com',
    size_bytes: d.SizeBytes,
    topic: r.topic,
    partition: r.partition,
    offset: Number(r.offset),
    kafka_timestamp: r.kafkaTimestamp,
    is_retraction: false,
    retraction_reason: null,
    sequence_number: d.SequenceNumber,
    event_version: rec.eventVersion,
    event_source: rec.eventSource,
    aws_region: rec.awsRegion,
    event_source_arn: rec.eventSourceARN,
    stream_view_type: d.StreamViewType,
    old_image: toJsonMap(d.OldImage),
    item: Object.fromEntries(Object.entries(d.OldImage).map(([k, v]) => [k, plainOf(v)])),
  };
}

/** A reader's row in the same form: the JSON columns parsed, numbers as numbers. */
function readRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (name === 'old_image' || name === 'item') out[name] = JSON.parse(value as string);
    else if (
      ['size_bytes', 'offset', 'partition', 'deleted_at', 'expired_at', 'kafka_timestamp'].includes(name)
    )
      out[name] = value === null ? null : Number(value);
    else out[name] = value;
  }
  return out;
}

/** Every row a reader found, by eventID; a row found twice fails. */
function byEventId(rows: Array<Record<string, unknown>>): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const row of rows) {
    const id = row.event_id as string;
    if (out.has(id)) throw new Error(`${id} read twice`);
    out.set(id, readRow(row));
  }
  return out;
}

async function python(
  reader: 'pyarrow' | 'spark',
  config: TtlstreamConfig,
  bucket: string,
  prefix: string,
  ddl: string[] = [],
) {
  const a = config.archive;
  const started = Date.now();
  const { stdout } = await exec(
    resolve(READERS, 'venv', 'bin', 'python'),
    [
      READ_SCRIPT,
      reader,
      '--endpoint',
      a.s3Endpoint ?? '',
      '--region',
      config.region,
      '--access-key',
      a.s3AccessKeyId ?? 'test',
      '--secret-key',
      a.s3SecretAccessKey ?? 'test',
      '--bucket',
      bucket,
      '--prefix',
      prefix,
      '--jars',
      resolve(READERS, 'jars'),
      ...ddl,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 300_000 },
  );
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const stats = lines.pop()?.stats as {
    files: number;
    rows: number;
    ddlRows?: number | null;
    cpuSeconds: number;
    jvmCpuSeconds?: number;
  };
  const wall = (Date.now() - started) / 1000;
  // The figure CI's budget needs: what one Spark job costs here (docs/decisions/0031).
  process.stderr.write(
    `[parquet readers] ${reader}: ${stats.files} files, ${stats.rows} rows in ${wall.toFixed(1)} s wall, ` +
      `${stats.cpuSeconds.toFixed(1)} s CPU${stats.jvmCpuSeconds === undefined ? '' : ` (JVM ${stats.jvmCpuSeconds.toFixed(1)} s)`}\n`,
  );
  return { rows: lines, files: stats.files, ddlRows: stats.ddlRows ?? null };
}

describe('the Parquet archive end to end, read by DuckDB, pyarrow and Spark', () => {
  const config = testConfig();
  const name = uniqueName('pq-e2e');
  const table = `${name}-items`;
  const control = `${name}-ctl`;
  const marks = `${name}-marks`;
  const topic = `${name}.remove`;
  let ddb: DynamoDBClient;
  let s3: S3Client;
  let bucket: string;
  let env: NodeJS.ProcessEnv;
  let parquet: ArchiveStorage;
  let avro: ArchiveStorage;
  let avroArchiver: RunningArchiver | undefined;
  let run: ReturnType<typeof spawnCli> | undefined;
  /** What the table held before the run: the items restore must put back, byte for byte. */
  let before: Map<string, Item>;
  const tables = [table, control, marks];

  const countRemoves = async (storage: ArchiveStorage): Promise<number> => {
    let n = 0;
    for await (const row of openCatalog(storage).scan(table)) if (row.kind === 'remove') n++;
    return n;
  };

  beforeAll(async () => {
    // Made once per machine (CI: in its background set-up); a first local run makes it here.
    if (!existsSync(resolve(READERS, '.complete')))
      await exec('bash', [resolve(ROOT_DIR, 'scripts', 'ensure-parquet-readers.sh')], { timeout: 1_500_000 });
    ddb = createDynamoClient(config);
    s3 = createS3Client(config);
    bucket = await createTestBucket(s3, name);
    await createTestTable(ddb, table, { hashKey: 'pk', rangeKey: 'sk', rangeType: 'N' });
    const now = Math.floor(Date.now() / 1000);
    const items = [
      ...Array.from({ length: EXPIRED }, (_, i) => itemOf(i, now - 120 - i)),
      ...Array.from({ length: KEPT }, (_, i) => itemOf(1000 + i, now + 86_400)),
    ];
    for (let i = 0; i < items.length; i += 25)
      await ddb.send(
        new BatchWriteItemCommand({
          RequestItems: { [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    before = new Map((await scanTable(ddb, table)).map((item) => [item.pk?.S as string, item]));
    expect(before.size).toBe(EXPIRED + KEPT);
    env = {
      TTLSTREAM_TABLES_CONTROL: control,
      TTLSTREAM_TABLES_MARKS: marks,
      TTLSTREAM_TOPICS_SHARED: topic,
      TTLSTREAM_TOPICS_DEAD_LETTER: `${topic}-dlq`,
      TTLSTREAM_TOPICS_PARTITIONS: '2',
      TTLSTREAM_ARCHIVE_URL: `s3://${bucket}/parquet`,
      TTLSTREAM_ARCHIVE_FORMAT: 'parquet',
      TTLSTREAM_ARCHIVE_GROUP_ID: `${name}-parquet`,
      TTLSTREAM_ARCHIVE_ROLL_MS: '1000',
      TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
      TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
      TTLSTREAM_PRODUCER_POLL_MS: '50',
    };
    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.code).toBe(0);

    // The Avro archive of the same run: another group on the same topic, archive.format avro.
    const avroConfig = testConfig({
      topics: { shared: topic, perTablePrefix: `${name}.t.`, deadLetter: `${topic}-dlq`, partitions: 2 },
      archive: { url: `s3://${bucket}/avro`, groupId: `${name}-avro`, rollMs: 1000, format: 'avro' },
    });
    avro = openArchiveStorage(avroConfig, s3);
    parquet = openArchiveStorage(testConfig({ archive: { url: `s3://${bucket}/parquet` } }), s3);
    const kafka = createKafka(avroConfig);
    const admin = kafka.admin();
    await admin.connect();
    await createTestTopic(admin, topic, 2);
    await admin.disconnect();
    avroArchiver = await startArchiverFor(avroConfig, {
      kafka,
      storage: avro,
      logger: silentLogger,
      tuning: { monitorIntervalMs: 500 },
    });
    run = spawnCli(['run', '--roles', 'scanner,producer,archiver'], env);
    await waitFor(
      'every expired item deleted and archived in both formats',
      async () => {
        if (run?.exitCode !== null) throw new Error(`ttlstream run exited:\n${run?.output()}`);
        return (await countRemoves(parquet)) >= EXPIRED && (await countRemoves(avro)) >= EXPIRED;
      },
      120_000,
    );
    run.kill('SIGTERM');
    expect((await run.result).code).toBe(0);
    await avroArchiver.stop();
    avroArchiver = undefined;
  }, 600_000);

  afterAll(async () => {
    if (run && run.exitCode === null && run.signalCode === null) run.kill('SIGKILL');
    await avroArchiver?.stop();
    for (const t of tables) await deleteTestTable(ddb, t);
    ddb?.destroy();
    s3?.destroy();
  });

  /** Every archived row of a storage's data files, decoded with the project's own readers. */
  async function archivedRows(storage: ArchiveStorage): Promise<{ rows: ArchivedRecord[]; files: number }> {
    const rows: ArchivedRecord[] = [];
    let files = 0;
    for await (const f of openCatalog(storage).listFiles(table)) {
      if (f.indexPath === null) continue;
      files += 1;
      rows.push(...(await decodeDataFile((await storage.get(f.path)) as Buffer, f.path)));
    }
    return { rows, files };
  }

  it('archives every deletion once in Parquet files, verify passes, and restore puts back byte-identical items', async () => {
    const [p, a] = [await archivedRows(parquet), await archivedRows(avro)];
    expect(p.files).toBeGreaterThan(0);
    const keysOf = (rows: ArchivedRecord[]): string[] =>
      rows.map((r) => r.record?.dynamodb.Keys.pk?.S as string).sort();
    const expired = [...before.keys()]
      .filter((k) => Number(before.get(k)?.exp?.N) < Date.now() / 1000)
      .sort();
    expect(expired).toHaveLength(EXPIRED);
    expect(keysOf(p.rows)).toEqual(expired);
    expect(keysOf(a.rows)).toEqual(expired);
    expect(p.rows.map((r) => r.eventID).sort()).toEqual(a.rows.map((r) => r.eventID).sort());
    const present = (await scanTable(ddb, table)).map((i) => i.pk?.S).sort();
    expect(present).toEqual([...before.keys()].filter((k) => !expired.includes(k)).sort());

    const verify = await runCli(['archive', 'verify', '--json'], env);
    expect({ code: verify.code, stderr: verify.stderr }).toMatchObject({ code: 0 });

    const target = await createTestTable(ddb, `${name}-restored`, {
      hashKey: 'pk',
      rangeKey: 'sk',
      rangeType: 'N',
    });
    tables.push(target);
    const restored = await runCli(
      ['restore', '--table', table, '--target-table', target, '--ttl', 'keep', '--json'],
      env,
    );
    expect(restored.code).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ restored: EXPIRED, failed: [] });
    const back = new Map((await scanTable(ddb, target)).map((item) => [item.pk?.S as string, item]));
    expect([...back.keys()].sort()).toEqual(expired);
    for (const key of expired) expect({ key, item: back.get(key) }).toEqual({ key, item: before.get(key) });
  }, 120_000);

  it('DuckDB, pyarrow and Spark read every Parquet file and find exactly the Avro archive, attribute for attribute', async () => {
    const [p, a] = [await archivedRows(parquet), await archivedRows(avro)];
    const expected = new Map(a.rows.map((r) => [r.eventID, expectedRow(r)]));
    expect(expected.size).toBe(EXPIRED);

    // Timestamps as epoch ms and the Hive partitions as their paths spell them, as the other readers give them.
    const sql =
      'select * exclude (deleted_at, expired_at, kafka_timestamp, date, hour), epoch_ms(deleted_at) as deleted_at, ' +
      'epoch_ms(expired_at) as expired_at, epoch_ms(kafka_timestamp) as kafka_timestamp, ' +
      "cast(date as varchar) as date, lpad(cast(hour as varchar), 2, '0') as hour from deletions";
    const duck = await runCli(['archive', 'query', '--table', table, '--json', sql], env);
    expect({ code: duck.code, stderr: duck.stderr }).toMatchObject({ code: 0 });
    const files = await runCli(['archive', 'query', '--table', table, 'select count(*) from deletions'], env);
    expect(files.stdout).toContain(`1 row(s) from ${p.files} file(s)`);
    const duckRows = JSON.parse(duck.stdout) as Array<Record<string, unknown>>;

    // The same Spark job also runs what `archive ddl --engine spark` prints and counts the deletions through it.
    const ddl = await runCli(
      ['archive', 'ddl', '--table', table, '--engine', 'spark', '--name', 'archived'],
      env,
    );
    expect(ddl.code).toBe(0);
    // The partition folders hold only Parquet files (key indexes are under _index/, docs/decisions/0033): the table
    // reads them whole, with no filter, as Athena and Trino do.
    expect(ddl.stdout).not.toContain('pathGlobFilter');
    const ddlFile = join(tmpdir(), `${name}.sql`);
    writeFileSync(ddlFile, ddl.stdout);
    const pyarrow = await python('pyarrow', config, bucket, 'parquet');
    const spark = await python('spark', config, bucket, 'parquet', [
      '--ddl',
      ddlFile,
      '--ddl-table',
      'archived',
    ]);
    rmSync(ddlFile, { force: true });
    expect(pyarrow.files).toBe(p.files);
    expect(spark.files).toBe(p.files);
    expect(spark.ddlRows).toBe(EXPIRED);

    for (const [reader, rows] of [
      ['duckdb', duckRows],
      ['pyarrow', pyarrow.rows],
      ['spark', spark.rows],
    ] as const) {
      const found = byEventId([...rows]);
      expect({ reader, ids: [...found.keys()].sort() }).toEqual({ reader, ids: [...expected.keys()].sort() });
      for (const [id, want] of expected) {
        const got = found.get(id) ?? {};
        const picked = Object.fromEntries(Object.keys(want).map((k) => [k, got[k]]));
        expect({ reader, row: picked }).toEqual({ reader, row: want });
      }
    }
  }, 600_000);
});
