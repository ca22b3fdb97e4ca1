import {
  BatchWriteItemCommand,
  DescribeTableCommand,
  PutItemCommand,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StatusReport, TableStatus } from '../../../cli/status/report';
import { runCli as runInProcess } from '../../../cli/program';
import { TtlSettingsStore } from '../../../control';
import { createDynamoClient } from '../../../core/clients';
import { serverConfig, serverEnv } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { fakeIo } from '../../support/cli';
import { freePort, runCli, spawnCli } from '../../support/cli-process';

type Item = Record<string, AttributeValue>;

/**
 * `ttlstream status` against a real `ttlstream run`: the control table's part (TTL, mode, attribute, guard) and the
 * figures of the running process's /metrics (last pass, marks backlog, deletion lag, archive lag), and what it says
 * when no process answers.
 */
describe('ttlstream status (real ttlstream run, real stack)', () => {
  const table = uniqueName('status');
  const control = uniqueName('status-ctl');
  const marks = uniqueName('status-marks');
  const topic = uniqueName('status-rm');
  const archiveDir = mkdtempSync(join(tmpdir(), 'ttlstream-status-'));
  let env: NodeJS.ProcessEnv;
  let ddb: DynamoDBClient;
  let run: ReturnType<typeof spawnCli> | undefined;

  async function status(...args: string[]): Promise<{ code: number; report: StatusReport; stderr: string }> {
    const io = fakeIo({ env: { ...process.env, ...env, TTLSTREAM_LOG_LEVEL: 'error' } });
    const code = await runInProcess(['status', '--json', ...args], io);
    if (io.stdout.text === '') throw new Error(`status printed nothing (exit ${code}): ${io.stderr.text}`);
    return { code, report: JSON.parse(io.stdout.text) as StatusReport, stderr: io.stderr.text };
  }
  const row = (r: StatusReport): TableStatus | undefined => r.tables.find((t) => t.table === table);

  /** Polls status until `check` holds for the table's row; returns that row. */
  async function statusUntil(
    what: string,
    check: (t: TableStatus) => boolean,
    ms = 90_000,
  ): Promise<TableStatus> {
    const deadline = Date.now() + ms;
    let last: unknown;
    for (;;) {
      const { code, report } = await status();
      const t = row(report);
      last = report;
      if (code === 0 && t && check(t)) return t;
      if (Date.now() > deadline || (run && run.exitCode !== null))
        throw new Error(
          `${what}: not seen within ${ms} ms; last status ${JSON.stringify(last)}\n${run?.output().slice(-3000) ?? ''}`,
        );
      await sleep(500);
    }
  }

  const remaining = async (): Promise<number> =>
    (await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items?.length ?? 0;

  beforeAll(async () => {
    ddb = createDynamoClient(testConfig());
    env = {
      TTLSTREAM_API_PORT: String(await freePort()),
      TTLSTREAM_TABLES_CONTROL: control,
      TTLSTREAM_TABLES_MARKS: marks,
      TTLSTREAM_TOPICS_SHARED: topic,
      TTLSTREAM_TOPICS_DEAD_LETTER: `${topic}-dlq`,
      TTLSTREAM_TOPICS_PARTITIONS: '2',
      TTLSTREAM_ARCHIVE_URL: `file://${archiveDir}`,
      TTLSTREAM_ARCHIVE_GROUP_ID: `${topic}-archiver`,
      TTLSTREAM_ARCHIVE_ROLL_MS: '1000',
      TTLSTREAM_ARCHIVE_MONITOR_INTERVAL_MS: '500',
      TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
      TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '2',
      TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
      TTLSTREAM_SCANNER_BACKLOG_PASS_INTERVAL_MS: '500',
      TTLSTREAM_PRODUCER_SHARDS: '2',
      TTLSTREAM_PRODUCER_POLL_MS: '50',
      TTLSTREAM_PRODUCER_IDLE_SWEEP_MS: '500',
      // Every item of the table expired: the guard pauses it, so its marks wait (the backlog) until confirmed.
      TTLSTREAM_GUARD_MAX_EXPIRED_FRACTION: '0.5',
      TTLSTREAM_GUARD_MIN_ITEMS_FOR_FRACTION: '1',
    };
    await createTestTable(ddb, table);
    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.stderr).toBe('');
    expect(enable.code).toBe(0);
    const expiredAt = Math.floor(Date.now() / 1000) - 60;
    const items: Item[] = Array.from({ length: 20 }, (_, i) => ({
      pk: { S: `k${i}` },
      exp: { N: String(expiredAt) },
    }));
    for (let i = 0; i < items.length; i += 25) {
      await ddb.send(
        new BatchWriteItemCommand({
          RequestItems: { [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    }
  });

  afterAll(async () => {
    if (run && run.exitCode === null && run.signalCode === null) {
      run.kill('SIGKILL');
      await run.result;
    }
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(archiveDir, { recursive: true, force: true });
  });

  it('no process running: the control-table part, each source said not to answer, exit 1', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/metrics`;
    const { code, report } = await status('--metrics-url', closed);
    expect(code).toBe(1);
    expect(row(report)).toMatchObject({
      table,
      ttl: 'ENABLED',
      mode: 'dynamodb',
      attribute: 'exp',
      expiryIndex: null,
      guard: 'ARMED',
      lastPassAt: null,
      marksBacklog: null,
      archiveTopic: topic,
    });
    expect(report.sources).toEqual([{ url: closed, answered: false, error: 'ECONNREFUSED' }]);
  });

  it('read-only: a control table that does not exist is not created (no table listed)', async () => {
    const missing = uniqueName('status-none');
    const io = fakeIo({ env: { ...process.env, ...env, TTLSTREAM_TABLES_CONTROL: missing } });
    await runInProcess(['status', '--metrics-url', `http://127.0.0.1:${await freePort()}/metrics`], io);
    expect(io.stdout.text).toContain('no table has TTL settings');
    await expect(ddb.send(new DescribeTableCommand({ TableName: missing }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
  });

  it('with ttlstream run: last pass, backlog while paused, then deletions: backlog 0, lag, archive figures, a later pass', async () => {
    run = spawnCli(['run', '--shutdown-timeout', '20s'], env);
    // The default URL is the API's /metrics (api.host:api.port of the same configuration).
    const paused = await statusUntil(
      'the guard pausing the table with its 20 marks waiting',
      (t) => t.guard === 'PAUSED' && t.marksBacklog === 20 && t.lastPassAt !== null,
    );
    expect(await remaining()).toBe(20);
    expect(paused.deletionLagSeconds).toBeNull();

    const confirm = await runCli(['guard', 'confirm', '--table', table], env);
    expect(confirm.code).toBe(0);
    const done = await statusUntil(
      'deletions after the confirm, archived',
      (t) =>
        t.marksBacklog === 0 &&
        t.deletionLagSeconds !== null &&
        t.archiveRecordsBehind === 0 &&
        t.lastPassAt !== null &&
        t.lastPassAt > (paused.lastPassAt as string),
    );
    expect(await remaining()).toBe(0);
    expect(done.guard).not.toBe('PAUSED');
    // The items expired 60 s before the run started: their expiry-to-record lag is at least that.
    expect(done.deletionLagSeconds).toBeGreaterThanOrEqual(60);
    expect(done.archiveLagSeconds).not.toBeNull();

    run.kill('SIGTERM');
    expect((await run.result).code).toBe(0);
    const after = await status();
    expect(after.code).toBe(1);
    expect(after.report.sources).toEqual([
      { url: `http://127.0.0.1:${env.TTLSTREAM_API_PORT}/metrics`, answered: false, error: 'ECONNREFUSED' },
    ]);
    expect(row(after.report)).toMatchObject({ table, ttl: 'ENABLED', lastPassAt: null, marksBacklog: null });
  }, 240_000);
});

/**
 * A table whose Scan keeps failing is named: moto's server fails every parallel Scan of a table whose hash key is
 * binary (MOTO_DEFECTS.binaryKeyParallelScan), a real failure of a real server. `ttlstream status` shows the table's
 * last error (service, operation, message) beside its missing pass, with the count of failures, and the scanner logs
 * the repeated failure once, not once per segment and retry.
 */
describe('ttlstream status: a table whose scans fail (moto, binary hash key)', () => {
  const table = uniqueName('status-bin');
  const control = uniqueName('status-bin-ctl');
  const marks = uniqueName('status-bin-marks');
  let ddb: DynamoDBClient;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    ddb = createDynamoClient(serverConfig('moto'));
    env = {
      ...serverEnv('moto'),
      TTLSTREAM_METRICS_PORT: String(await freePort()),
      TTLSTREAM_TABLES_CONTROL: control,
      TTLSTREAM_TABLES_MARKS: marks,
      TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '2',
      TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
      // One attempt per request: the SDK's own retries of the 500 would only slow each failure down further.
      TTLSTREAM_DYNAMODB_MAX_ATTEMPTS: '1',
    };
    await createTestTable(ddb, table, { hashKey: 'pk', hashType: 'B' });
    const store = new TtlSettingsStore(ddb, { controlTable: control, propagationMs: 0 });
    await store.update(
      table,
      { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: 'exp' } } },
      'test',
    );
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          pk: { B: new Uint8Array([7, 0, 255]) },
          exp: { N: String(Math.floor(Date.now() / 1000) - 60) },
        },
      }),
    );
  });
  afterAll(async () => {
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
  });

  async function status(json: boolean): Promise<{ code: number; stdout: string }> {
    const io = fakeIo({ env: { ...process.env, ...env, TTLSTREAM_LOG_LEVEL: 'error' } });
    const url = `http://127.0.0.1:${env.TTLSTREAM_METRICS_PORT}/metrics`;
    const code = await runInProcess(['status', '--metrics-url', url, ...(json ? ['--json'] : [])], io);
    return { code, stdout: io.stdout.text };
  }

  it('shows the last error beside the missing pass, counts the failures, and logs the repeated failure once', async () => {
    const run = spawnCli(['run', '--roles', 'scanner', '--shutdown-timeout', '10s'], env);
    try {
      await seeFailing(run);
    } finally {
      // A graceful stop whether the checks passed or not (--shutdown-timeout bounds it).
      if (run.exitCode === null && run.signalCode === null) run.kill('SIGTERM');
    }
    expect((await run.result).code).toBe(0);
    const failedLines = run
      .output()
      .split('\n')
      .filter((l) => l.includes(`scan-pass of ${table}`));
    expect(failedLines).toHaveLength(1);
    expect(failedLines[0]).toContain('failed; retrying with back-off');
  }, 90_000);

  /** Polls status until the table is failing three times over, then checks what status says of it. */
  async function seeFailing(run: ReturnType<typeof spawnCli>): Promise<void> {
    let row: TableStatus | undefined;
    const deadline = Date.now() + 60_000;
    // Each failure comes after the page's own retries (about 10 s of back-off); three are both segments failing and
    // one of them again.
    while (!(row?.failing && (row.scanFailures ?? 0) >= 3)) {
      if (Date.now() > deadline || run.exitCode !== null)
        throw new Error(`no failing scans seen: ${JSON.stringify(row)}\n${run.output().slice(-3000)}`);
      await sleep(500);
      const { code, stdout } = await status(true);
      if (code === 0) row = (JSON.parse(stdout) as StatusReport).tables.find((t) => t.table === table);
    }
    expect(row).toMatchObject({
      lastPassAt: null,
      failing: true,
      lastFailure: {
        service: 'dynamodb',
        operation: 'ScanCommand',
        message: expect.stringMatching(/^HTTP 500: /),
      },
    });
    const human = await status(false);
    expect(human.stdout).toMatch(
      new RegExp(`^${table}: no pass yet; scans fail: dynamodb ScanCommand \\S+: HTTP 500: `, 'm'),
    );
    expect(human.stdout).toContain('- (FAILING, see below)');
  }
});
