import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Consumer } from 'kafkajs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningArchiver } from '../../../archiver';
import { openCatalog } from '../../../archive/catalog';
import { readArchiveFile } from '../../../archive/reader';
import { openArchiveStorage, type ArchiveStorage } from '../../../archive/storage';
import { createDynamoClient, createS3Client } from '../../../core/clients';
import { silentLogger } from '../../../core/logger';
import { addLastWriteStamp, expiryStampTables, type TableTtlSettings } from '../../../policy';
import { decodeMessage, keyDigest, type StreamRecord } from '../../../schemas';
import { backfillForTest, createTableWithExpiryIndex } from '../../support/expiry-index';
import { createTestBucket, createTestTable, testConfig, uniqueName } from '../../support/stack';
import {
  createEnv,
  ensureStreamTopic,
  pipelineConfig,
  putItems,
  scanAll,
  spawnPipeline,
  startInProcess,
  type Env,
  type InProcess,
  type Item,
} from '../../support/pipeline-harness';
import { runCli } from '../../support/cli-process';
import { waitFor } from '../../support/wait-for';
import { startArchiverFor } from '../../support/in-process-archiver';

/**
 * `ttlstream audit` against ground truth from a real pipeline run (scanner, producer, archiver, Kafka, the
 * DynamoDB server, a file-system or S3 archive): on-time deletions, late ones (expired while the pipeline was
 * stopped), retracted ones (a producer killed after publishing, the items' TTL extended before the next producer
 * deleted them), items still present (expired after the pipeline stopped), held ones, and items the audit must not
 * report (malformed TTL, expired before the window, not yet expired). The truth is built from what the test wrote
 * (each item's TTL instant) and what Kafka carried (eventID, partition, offset, publish time, retractions), never
 * from the archive or the policy engine the audit uses. The file-system run reads the table by a Scan, the S3 run
 * through the expiry index.
 */

const SLA_MS = 8000;
const LATE_PAUSE_MS = 12_000;

interface Seen {
  record: StreamRecord;
  topic: string;
  partition: number;
  offset: string;
  timestampMs: number;
}

/** Every REMOVE and RETRACT on the stream topic, with its Kafka coordinates. */
class Coordinates {
  readonly removes: Seen[] = [];
  readonly retracted = new Set<string>();
  private consumer?: Consumer;

  async start(env: Env, topic: string): Promise<void> {
    this.consumer = env.kafka.consumer({ groupId: uniqueName('audit-truth'), sessionTimeout: 10_000 });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    await this.consumer.run({
      eachMessage: async ({ topic: t, partition, message }) => {
        const headers: Record<string, Buffer | string | undefined> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = Array.isArray(v) ? v[0] : v;
        const d = decodeMessage(message.value, headers);
        if (d.kind === 'retract') this.retracted.add(d.retraction.retractsEventID);
        else
          this.removes.push({
            record: d.record,
            topic: t,
            partition,
            offset: message.offset,
            timestampMs: Number(message.timestamp),
          });
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }

  /** Each eventID once (the first copy: a re-publish repeats the record, and the archive keeps one). */
  unique(): Seen[] {
    const byId = new Map<string, Seen>();
    for (const s of this.removes) if (!byId.has(s.record.eventID)) byId.set(s.record.eventID, s);
    return [...byId.values()];
  }
}

interface AuditLine {
  status: string;
  key: string;
  ttlAt: string | null;
  deletedAt: string | null;
  publishedAt: string | null;
  lagMs: number | null;
  eventID: string | null;
  topic: string | null;
  partition: number | null;
  offset: string | null;
  file: string | null;
  row: number | null;
}

interface AuditSummaryLine {
  summary: {
    deletions: number;
    late: number;
    retracted: number;
    noTtl: number;
    present: number;
    pending: number;
    held: number;
    lagMs: { p50: number; p99: number; max: number } | null;
    breach: boolean;
    tableReadVia: string;
  };
}

/** Nearest rank, written here again rather than imported: the truth does not use the code under test. */
function nearestRank(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1] as number;
}

const sec = (ms: number): number => Math.floor(ms / 1000);

describe.each([
  ['fs', 'scan'],
  ['s3', 'index'],
] as const)('ttlstream audit on a %s archive (table read by %s)', (kind, via) => {
  let env: Env;
  let archiver: RunningArchiver;
  let storage: ArchiveStorage;
  let truth: Coordinates;
  let writer: DynamoDBClient;
  let table: string;
  let dir: string | undefined;
  let cliEnv: NodeJS.ProcessEnv;
  const settings: TableTtlSettings = {
    policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
    legalHoldAttribute: 'hold',
    ...(via === 'index' ? { expiryIndex: { shards: 4 } } : {}),
  };

  beforeAll(async () => {
    let url: string;
    if (kind === 'fs') {
      dir = await mkdtemp(join(tmpdir(), 'ttlstream-audit-'));
      url = `file://${dir}`;
    } else {
      const s3 = createS3Client(testConfig());
      url = `s3://${await createTestBucket(s3, uniqueName('audit'))}/archive`;
      s3.destroy();
    }
    env = await createEnv(
      pipelineConfig({
        archive: { url, groupId: uniqueName('audit-arch'), rollMs: 300 },
        scanner: { indexPollMs: 100, indexRewindMs: 1000, sweepIntervalMs: 3_600_000 },
      }),
    );
    table =
      via === 'index'
        ? await createTableWithExpiryIndex(env.ddb, uniqueName('audit-idx'), settings)
        : await createTestTable(env.ddb, uniqueName('audit-scan'), { hashKey: 'pk' });
    env.tables.push(table);
    await env.store.update(table, { enabled: true, settings }, 'test');
    if (via === 'index') {
      await backfillForTest(env.ddb, env.config.tables.control, table, settings);
    }
    // Writers go through the stamp, so index mode finds their items (scan mode ignores it).
    writer = createDynamoClient(env.config);
    addLastWriteStamp(writer, {
      tables: {},
      expiryIndex: via === 'index' ? expiryStampTables({ [table]: settings }, { [table]: ['pk'] }) : {},
      resolution: 'milliseconds',
    });
    const topic = await ensureStreamTopic(env);
    truth = new Coordinates();
    await truth.start(env, topic);
    storage = openArchiveStorage(env.config);
    archiver = await startArchiverFor(env.config, {
      kafka: env.kafka,
      storage,
      logger: silentLogger,
      tuning: { monitorIntervalMs: 500 },
    });
    cliEnv = {
      TTLSTREAM_ARCHIVE_URL: url,
      TTLSTREAM_TABLES_CONTROL: env.config.tables.control,
      TTLSTREAM_TABLES_MARKS: env.config.tables.marks,
    };
  }, 120_000);

  afterAll(async () => {
    await archiver?.stop();
    await truth?.stop();
    writer?.destroy();
    await env?.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reports every deletion, lag, SLA breach, retraction and item still present as the ground truth has them', async () => {
    const ttlMs = new Map<string, number>(); // pk → the TTL instant we wrote
    const put = async (pk: string, ttl: Item['expiresAt'], extra: Item = {}): Promise<void> => {
      await putItems(writer, table, [{ pk: { S: pk }, expiresAt: ttl, ...extra }]);
    };
    const putTtl = async (pk: string, ms: number, extra: Item = {}): Promise<void> => {
      ttlMs.set(pk, ms);
      await put(pk, { N: String(ms / 1000) }, extra);
    };
    const gone = (pks: string[]) => async () => {
      const present = await scanAll(env.ddb, table);
      return pks.every((pk) => !present.has(pk));
    };
    const fromMs = Date.now() - 60_000;

    // 1. Retractions: a producer killed right after publishing; the items' TTL is extended before the next one
    //    deletes them, so it retracts the published REMOVEs (they never happened) and the items stay.
    const retractPks = [0, 1, 2].map((i) => `retract-${i}`);
    const retractTtl = (sec(Date.now()) - 2) * 1000;
    for (const pk of retractPks) await putTtl(pk, retractTtl);
    const scanner = await startInProcess(env, ['scanner']);
    const crashing = spawnPipeline(env.config, ['producer'], {
      TTLSTREAM_CRASH_AT: 'producer.after-publish@1',
    });
    await crashing.exited;
    await waitFor('REMOVEs of the crashed batch', async () => truth.removes.length > 0, 15_000);
    for (const pk of retractPks) await put(pk, { N: String(sec(Date.now()) + 3600) });
    let pipeline: InProcess = await startInProcess(env, ['producer']);
    await waitFor(
      'the published REMOVEs to be retracted',
      async () => truth.unique().every((s) => truth.retracted.has(s.record.eventID)),
      30_000,
    );
    expect(truth.retracted.size).toBeGreaterThan(0);

    // 2. On-time deletions while the pipeline runs (TTL with a fraction of a second: the exact instant counts).
    const okPks = [...Array(8).keys()].map((i) => `ok-${i}`);
    const okTtl = (sec(Date.now()) + 2) * 1000 + 500;
    for (const pk of okPks) await putTtl(pk, okTtl);
    await waitFor('on-time deletions', gone(okPks), 30_000);

    // 3. Late deletions: they expire while the pipeline is stopped, and are deleted when it comes back.
    await pipeline.stop();
    await scanner.stop();
    const latePks = [...Array(4).keys()].map((i) => `late-${i}`);
    const lateTtl = (sec(Date.now()) + 1) * 1000;
    for (const pk of latePks) await putTtl(pk, lateTtl);
    await sleep(LATE_PAUSE_MS);
    pipeline = await startInProcess(env, ['scanner', 'producer']);
    await waitFor('late deletions', gone(latePks), 30_000);
    await pipeline.stop();

    // 4. With the pipeline stopped for good: expired items that stay, held ones, and items the audit must not
    //    report (a malformed TTL, a TTL before the window, a TTL not reached yet).
    const presentPks = [0, 1, 2].map((i) => `present-${i}`);
    const heldPks = [0, 1].map((i) => `held-${i}`);
    const presentTtl = lateTtl + 1000; // well past the SLA by the time the audit runs
    for (const pk of presentPks) await putTtl(pk, presentTtl);
    for (const pk of heldPks) await putTtl(pk, presentTtl, { hold: { BOOL: true } });
    // Ignored TTL values (never deleted, so never overdue): a String (index mode cannot hold one: the index's sort
    // key must be a Number), and a Number more than five years in the past.
    if (via === 'scan') await put('malformed', { S: String(sec(presentTtl)) });
    await put('ancient', { N: String(sec(Date.now()) - 6 * 366 * 86_400) });
    await putTtl('before-window', fromMs - 600_000);
    await putTtl('future', Date.now() + 3_600_000);
    const toMs = Date.now() + 60_000;

    // Everything Kafka carried is in the archive before the audit reads it.
    await waitFor(
      'the archive to hold every record',
      async () => {
        const removes = new Set<string>();
        const retractions = new Set<string>();
        for await (const row of openCatalog(storage).scan(table))
          (row.kind === 'remove' ? removes : retractions).add(row.retractsEventID ?? row.eventID);
        return (
          truth.unique().every((s) => removes.has(s.record.eventID)) &&
          [...truth.retracted].every((id) => retractions.has(id))
        );
      },
      60_000,
    );

    // The ground truth: every REMOVE Kafka carried, its TTL instant from what we wrote.
    const expected = new Map(
      truth
        .unique()
        .map((s) => {
          const pk = s.record.dynamodb.Keys.pk?.S as string;
          const ttl = ttlMs.get(pk) as number;
          const lag = s.timestampMs - ttl;
          const status = truth.retracted.has(s.record.eventID)
            ? 'retracted'
            : lag > SLA_MS
              ? 'late'
              : 'deleted';
          return { s, pk, ttl, lag, status };
        })
        .filter((t) => t.ttl >= fromMs && t.ttl < toMs)
        .map((t) => [t.s.record.eventID, t] as const),
    );
    const truthOf = (status: string) => [...expected.values()].filter((t) => t.status === status);
    const deletionLags = [...truthOf('deleted'), ...truthOf('late')].map((t) => t.lag);
    // The scenario produced what it is meant to test.
    expect(truthOf('late').length).toBeGreaterThanOrEqual(latePks.length);
    expect(truthOf('deleted').length).toBeGreaterThan(0);
    expect(truthOf('retracted').length).toBeGreaterThan(0);
    expect((await scanAll(env.ddb, table)).has('present-0')).toBe(true);

    const r = await runCli(
      [
        'audit',
        '--table',
        table,
        '--from',
        new Date(fromMs).toISOString(),
        '--to',
        String(Math.ceil(toMs / 1000)),
        '--sla',
        `${SLA_MS / 1000}s`,
        '--json',
      ],
      cliEnv,
      120_000,
    );
    expect(r.stderr).not.toMatch(/ttlstream: /);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditLine | AuditSummaryLine);
    const summary = (lines.pop() as AuditSummaryLine).summary;
    const rows = lines as AuditLine[];

    // Every deletion row, field by field, against Kafka and what we wrote.
    const archived = rows.filter((x) => x.eventID !== null);
    expect(archived.map((x) => x.eventID).sort()).toEqual([...expected.keys()].sort());
    for (const row of archived) {
      const t = expected.get(row.eventID as string)!;
      expect(row).toMatchObject({
        status: t.status,
        key: JSON.stringify({ pk: { S: t.pk } }),
        ttlAt: new Date(t.ttl).toISOString(),
        deletedAt: new Date(t.s.record.dynamodb.ApproximateCreationDateTime * 1000).toISOString(),
        publishedAt: new Date(t.s.timestampMs).toISOString(),
        lagMs: t.lag,
        topic: t.s.topic,
        partition: t.s.partition,
        offset: t.s.offset,
      });
      // The archive file and row it names hold that very record.
      const records = await readArchiveFile(storage, row.file as string);
      expect(records[row.row as number]?.eventID).toBe(row.eventID);
    }
    // The items still in the table: expired in the window and overdue, or held; nothing else.
    const inTable = (status: string) =>
      rows
        .filter((x) => x.status === status)
        .map((x) => x.key)
        .sort();
    expect(inTable('present')).toEqual(presentPks.map((pk) => JSON.stringify({ pk: { S: pk } })).sort());
    expect(inTable('held')).toEqual(heldPks.map((pk) => JSON.stringify({ pk: { S: pk } })).sort());
    expect(inTable('pending')).toEqual([]);
    for (const row of rows.filter((x) => x.status === 'present'))
      expect(row.ttlAt).toBe(new Date(presentTtl).toISOString());

    expect(summary).toMatchObject({
      deletions: deletionLags.length,
      late: truthOf('late').length,
      retracted: truthOf('retracted').length,
      noTtl: 0,
      present: presentPks.length,
      pending: 0,
      held: heldPks.length,
      lagMs: {
        p50: nearestRank(deletionLags, 50),
        p99: nearestRank(deletionLags, 99),
        max: Math.max(...deletionLags),
      },
      breach: true,
      tableReadVia: via,
    });
    expect(r.code).toBe(4);

    // The text form: the rows that need a look (no on-time deletion), then the summary.
    const text = await runCli(
      [
        'audit',
        '--table',
        table,
        '--from',
        String(sec(fromMs)),
        '--to',
        String(Math.ceil(toMs / 1000)),
        '--sla',
        '8s',
      ],
      cliEnv,
      120_000,
    );
    expect(text.code).toBe(4);
    const statuses = text.stdout
      .split('\n')
      .map((l) => /^([A-Z-]+)\s+\d{4}-/.exec(l)?.[1])
      .filter((x): x is string => x !== undefined);
    expect(statuses.filter((x) => x === 'DELETED')).toEqual([]);
    for (const status of ['late', 'retracted', 'present', 'held'])
      expect(statuses.filter((x) => x === status.toUpperCase())).toHaveLength(
        rows.filter((x) => x.status === status).length,
      );
    expect(text.stdout).toMatch(new RegExp(`later than the SLA\\s+${summary.late}\\b`));
    expect(text.stdout).toMatch(/BREACH/);

    // A window of the on-time deletions alone, as CSV with hashed keys: exit 0 unless one of them was late.
    const okWindow = [...expected.values()].filter((t) => t.ttl === okTtl);
    const csv = await runCli(
      [
        'audit',
        '--table',
        table,
        '--from',
        new Date(okTtl - 500).toISOString(),
        '--to',
        new Date(okTtl + 500).toISOString(),
        '--sla',
        `${SLA_MS / 1000}s`,
        '--csv',
        '--hash-keys',
      ],
      cliEnv,
      120_000,
    );
    const [header, ...csvRows] = csv.stdout.trim().split('\r\n');
    expect(header).toBe(
      'status,key,ttlAt,deletedAt,publishedAt,lagMs,eventID,topic,partition,offset,file,row,deletedBy',
    );
    const parsed = csvRows.map((l) => l.split(','));
    expect(parsed.map((c) => c[6]).sort()).toEqual(okWindow.map((t) => t.s.record.eventID).sort());
    for (const c of parsed) {
      const t = expected.get(c[6] as string)!;
      expect(c[1]).toBe(keyDigest(table, { pk: { S: t.pk } }));
      expect(c[0]).toBe(t.status);
      expect(c[12]).toBe('ttlstream');
    }
    expect(csv.stderr).toMatch(/deletions\s+\d+/);
    expect(csv.code).toBe(okWindow.some((t) => t.status === 'late') ? 4 : 0);

    // An erased data subject leaves the audit too (the catalog honours the erasure ledger): its deletion row is
    // gone, every other row stays.
    const erased = okWindow[0]!;
    let erase = await runCli(
      [
        'archive',
        'erase',
        '--table',
        table,
        '--key',
        JSON.stringify({ pk: { S: erased.pk } }),
        '--reason',
        'T-1',
      ],
      cliEnv,
      120_000,
    );
    // A roll of the table still being written when the erasure began: the command says so; a rerun finishes.
    for (let i = 0; i < 5 && erase.code === 1 && /still being written/.test(erase.stdout + erase.stderr); i++)
      erase = await runCli(
        ['archive', 'erase', '--table', table, '--key', JSON.stringify({ pk: { S: erased.pk } })],
        cliEnv,
        120_000,
      );
    expect(erase.code).toBe(0);
    const after = await runCli(
      [
        'audit',
        '--table',
        table,
        '--from',
        new Date(okTtl - 500).toISOString(),
        '--to',
        new Date(okTtl + 500).toISOString(),
        '--csv',
      ],
      cliEnv,
      120_000,
    );
    const afterIds = after.stdout
      .trim()
      .split('\r\n')
      .slice(1)
      .map((l) => l.split(',')[6]);
    expect(afterIds.sort()).toEqual(
      okWindow
        .filter((t) => t !== erased)
        .map((t) => t.s.record.eventID)
        .sort(),
    );
  }, 360_000);
});
