import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DYNAMODB_GRANTS,
  S3_GRANTS,
  type ArchiveClass,
  type TableClass,
} from '../../../cli/iam-policy/policy';
import { ROLE_NAMES, type RoleName } from '../../../cli/kit/run-roles';
import { DeleteItemCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient, createS3Client } from '../../../core/clients';
import { motoEndpoint } from '../../support/ports';
import type { TableTtlSettings } from '../../../policy/settings';
import { createTestBucket, createTestTable, uniqueName } from '../../support/stack';
import { followedTable } from '../../support/followed-table';
import { freePort, spawnCli } from '../../support/cli-process';
import {
  createEnv,
  createTableIn,
  pipelineConfig,
  putItems,
  scanAll,
  type Env,
  type Item,
} from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';

const TTL: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'exp' } };
const TOKEN = 'iam-policy-test-token-0123456789';

/**
 * Grants the policy gives that this run cannot make a role send, with why. Everything else granted must be sent, and
 * everything sent must be granted.
 */
const NOT_SENT_HERE: Record<string, string> = {
  'archiver CreateMultipartUpload@objects': 'only files above 16 MiB are uploaded in parts',
  'archiver UploadPart@objects': 'only files above 16 MiB are uploaded in parts',
  'archiver CompleteMultipartUpload@objects': 'only files above 16 MiB are uploaded in parts',
  'archiver AbortMultipartUpload@objects': 'a multipart upload that failed',
  'archiver DeleteObject@objects': 'the retention schedule removes only files older than a day',
  'archiver CopyObject@objects': 'compaction moves files of hours closed for archive.compactAfterMs (2 h)',
  'streams PutObject@objects': 'a stream loss record: records that left a stream before they were read',
  'streams GetObject@objects': 'a stream loss record or its acknowledgement, read back: none here',
};

/**
 * Grants this run may or may not exercise, by timing: neither "never sent" nor "sent" is asserted for them (what is
 * sent is still checked against the policy). DeleteItem on the internal tables is usually sent at the graceful
 * stop, after the last scrape; one full run on a loaded machine (load average above 20) counted the producer's
 * before it.
 */
const SENT_BY_TIMING: Record<string, string> = {
  'scanner DeleteItem@internal': 'leases handed back, member row removed: mostly at the graceful stop',
  'producer DeleteItem@internal': 'leases handed back, member row removed: mostly at the graceful stop',
  'streams DeleteItem@internal':
    'shard leases handed back, member row removed at the graceful stop; checkpoints of shards gone from the stream',
  'producer GetItem@user': 'a conditional delete refused because a writer changed the item meanwhile',
};

interface Scraped {
  dynamodb: Array<{ operation: string; table: string }>;
  streams: string[];
  s3: string[];
}

/** The DynamoDB and S3 operations a process has sent so far, from its own /metrics. */
async function scrape(port: number): Promise<Scraped> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out: Scraped = { dynamodb: [], streams: [], s3: [] };
  for (const m of text.matchAll(
    /^ttlstream_dynamodb_requests_total\{operation="([^"]+)",table="([^"]*)"\} (\d+)/gm,
  ))
    if (Number(m[3]) > 0) out.dynamodb.push({ operation: m[1] as string, table: m[2] as string });
  for (const m of text.matchAll(/^ttlstream_s3_requests_total\{operation="([^"]+)"\} (\d+)/gm))
    if (Number(m[2]) > 0) out.s3.push(m[1] as string);
  for (const m of text.matchAll(/^ttlstream_dynamodb_streams_requests_total\{operation="([^"]+)"\} (\d+)/gm))
    if (Number(m[2]) > 0) out.streams.push(m[1] as string);
  return out;
}

const strip = (operation: string): string => operation.replace(/Command$/, '');

/**
 * Every DynamoDB and S3 operation a `ttlstream run --roles <role>` process sends, each role in a process of its own
 * (as deploy/k8s/ runs them), counted by the processes' own request counters, against what `ttlstream iam-policy`
 * grants that role (cli/iam-policy/policy.ts). A table in scan mode and one in index mode, TTL enabled through the control
 * plane, items deleted, archived to S3 and purged on schedule, the control plane's reads, preview and guard calls.
 */
describe('iam-policy: each role is granted exactly the operations it sends', () => {
  let env: Env;
  let s3: S3Client;
  let moto: DynamoDBClient;
  const motoTables: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-iam-'));
  const bucket = uniqueName('iam-archive');
  const processes = new Map<RoleName, { child: ReturnType<typeof spawnCli>; port: number }>();
  const output = (): string =>
    [...processes].map(([role, p]) => `--- ${role}:\n${p.child.output().slice(-3000)}`).join('\n');

  beforeAll(async () => {
    env = await createEnv(
      pipelineConfig({
        archive: {
          url: `s3://${bucket}/ttl`,
          rollMs: 500,
          retentionDays: 1,
          purgeIntervalMs: 1000,
          groupId: uniqueName('iam-group'),
          monitorIntervalMs: 1000,
          sessionTimeoutMs: 6000,
        },
        api: { tokens: [TOKEN], ttlPropagationMs: 0 },
        // 20 of 25 items expired pauses a table: the operator's answers (cancel, confirm) go through the control plane.
        guard: { maxExpiredFraction: 0.5, minItemsForFraction: 10 },
        log: { level: 'warn' },
      }),
    );
    s3 = createS3Client(env.config);
    await createTestBucket(s3, bucket);
    moto = createDynamoClient({
      ...env.config,
      dynamodb: { ...env.config.dynamodb, endpoint: motoEndpoint() },
    });
  });

  afterAll(async () => {
    await Promise.all(
      [...processes.values()].map(async ({ child }) => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await Promise.race([child.result, sleep(20_000).then(() => child.kill('SIGKILL'))]);
      }),
    );
    await env.cleanup();
    for (const t of [...motoTables, env.config.tables.control])
      await moto.send(new DeleteTableCommand({ TableName: t })).catch(() => undefined);
    moto.destroy();
    s3.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends nothing it is not granted, and is granted nothing it does not send', async () => {
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(env.config));
    const start = async (role: RoleName, extra: NodeJS.ProcessEnv = {}): Promise<number> => {
      const port = await freePort();
      const child = spawnCli(['run', '--roles', role, '--shutdown-timeout', '10s'], {
        TTLSTREAM_CONFIG: configFile,
        ...(role === 'api' ? { TTLSTREAM_API_PORT: String(port) } : { TTLSTREAM_METRICS_PORT: String(port) }),
        ...extra,
      });
      processes.set(role, { child, port });
      await waitFor(
        `${role} ready`,
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok,
        60_000,
        250,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\n${output()}`);
      });
      return port;
    };

    // The control plane first: TTL for the scan-mode table is enabled through it.
    const api = await start('api');
    const request = async (
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; json: unknown }> => {
      const res = await fetch(`http://127.0.0.1:${api}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: (await res.json()) as unknown };
    };
    const call = async (method: string, path: string, body?: unknown): Promise<number> =>
      (await request(method, path, body)).status;
    const scanTable = await createTestTable(env.ddb, uniqueName('iam-scan'));
    env.tables.push(scanTable);
    expect(await call('PUT', `/tables/${scanTable}/ttl`, { enabled: true, settings: TTL })).toBe(200);
    const indexed = await createTableIn(env, 'index', 'iam-index', TTL, 2);
    const now = Math.floor(Date.now() / 1000);
    const items = (prefix: string): Item[] => [
      ...Array.from({ length: 20 }, (_, i) => ({
        pk: { S: `${prefix}x${i}` },
        exp: { N: String(now - 60) },
      })),
      ...Array.from({ length: 5 }, (_, i) => ({
        pk: { S: `${prefix}a${i}` },
        exp: { N: String(now + 86_400) },
      })),
    ];
    await putItems(env.ddb, scanTable, items('s'));
    await putItems(indexed.writer, indexed.table, items('i'));
    for (const path of [
      '/tables',
      `/tables/${scanTable}/ttl`,
      `/tables/${indexed.table}/ttl`,
      `/tables/${scanTable}/expiring?within=3600`,
      `/tables/${scanTable}/guard`,
    ])
      expect({ path, status: await call('GET', path) }).toEqual({ path, status: 200 });

    await Promise.all((['archiver', 'producer', 'scanner'] as const).map((r) => start(r)));
    // The streams role follows a table DynamoDB's own TTL deletes from: on moto's server, which serves DynamoDB
    // Streams (dynalite does not); its settings, leases and checkpoints in a control table there.
    const followed = await followedTable(moto, env.config.tables.control, 'iam-streams', motoTables, {
      attribute: 'exp',
    });
    const streamsPort = await start('streams', {
      TTLSTREAM_DYNAMODB_ENDPOINT: motoEndpoint(),
      TTLSTREAM_STREAMS_REMOVES: 'all',
      TTLSTREAM_STREAMS_DISCOVER_MS: '500',
    });
    await putItems(moto, followed, [{ pk: { S: 'followed#1' }, exp: { N: String(now - 60) } }]);
    await moto.send(new DeleteItemCommand({ TableName: followed, Key: { pk: { S: 'followed#1' } } }));
    await waitFor(
      "the followed table's REMOVE published",
      async () =>
        /^ttlstream_streams_records_published_total\{table="[^"]+"\} [1-9]/m.test(
          await (await fetch(`http://127.0.0.1:${streamsPort}/metrics`)).text(),
        ),
      60_000,
    );
    const cancelled = new Set<string>();
    for (const table of [scanTable, indexed.table])
      await waitFor(
        `the expired items of ${table} deleted (after the guard's pause is answered)`,
        async () => {
          const guard = (await request('GET', `/tables/${table}/guard`)).json as { state?: string };
          if (guard.state === 'PAUSED') {
            // Cancelled on the scan-mode table only: it scans again at once, where an index shard comes back to a
            // discarded mark only at its next rewind (scanner.indexRewindMs).
            if (table === scanTable && !cancelled.has(table)) {
              expect(await call('POST', `/tables/${table}/guard/cancel`)).toBe(200);
              cancelled.add(table);
            }
            expect(await call('POST', `/tables/${table}/guard/confirm`)).toBe(200);
          }
          return (await scanAll(env.ddb, table)).size === 5;
        },
        90_000,
        500,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\n${output()}`);
      });
    expect(cancelled.size).toBeGreaterThan(0);
    await waitFor(
      'Avro files in the archive',
      async () =>
        ((await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'ttl/' }))).Contents ?? []).some(
          (o) => o.Key?.endsWith('.avro'),
        ),
      60_000,
    );
    // A purge round or two after the files were written.
    await sleep(2500);

    const classOf = (table: string): TableClass =>
      table === '-'
        ? 'account'
        : table === env.config.tables.control || table === env.config.tables.marks
          ? 'internal'
          : table === scanTable || table === indexed.table || table === followed
            ? 'user'
            : 'anyTable';
    const sent = new Set<string>();
    for (const [role, p] of processes) {
      const scraped = await scrape(p.port);
      for (const { operation, table } of scraped.dynamodb)
        for (const t of table.split(',')) sent.add(`${role} ${strip(operation)}@${classOf(t)}`);
      for (const operation of scraped.s3)
        sent.add(
          `${role} ${strip(operation)}@${strip(operation) === 'ListObjectsV2' ? 'bucket' : 'objects'}`,
        );
      // ListStreams names no table's stream (an account-level action); the others name one stream of a table.
      for (const operation of scraped.streams)
        sent.add(
          `${role} ${strip(operation)}@${strip(operation) === 'ListStreams' ? 'account' : 'userStream'}`,
        );
    }
    const granted = new Set<string>();
    for (const role of ROLE_NAMES) {
      for (const [cls, ops] of Object.entries(DYNAMODB_GRANTS[role]))
        for (const op of ops ?? []) granted.add(`${role} ${op}@${cls as TableClass}`);
      for (const [cls, ops] of Object.entries(S3_GRANTS[role]))
        for (const op of ops ?? []) granted.add(`${role} ${op}@${cls as ArchiveClass}`);
    }
    const notGranted = [...sent].filter((s) => !granted.has(s)).sort();
    const neverSent = [...granted]
      .filter((g) => !sent.has(g) && !(g in NOT_SENT_HERE) && !(g in SENT_BY_TIMING))
      .sort();
    expect({ notGranted, neverSent }).toEqual({ notGranted: [], neverSent: [] });
    // The exceptions stay exceptions: none of them was sent after all (then it belongs to the checked grants).
    expect(Object.keys(NOT_SENT_HERE).filter((g) => sent.has(g))).toEqual([]);
  }, 300_000);
});
