import {
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceNotFoundException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalog } from '../../../archive/catalog';
import { openArchiveStorage } from '../../../archive/storage';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { silentLogger } from '../../../core/logger';
import { figureText } from '../../support/html-figures';
import {
  createTestTable,
  createTestTopic,
  deleteTestTable,
  testConfig,
  uniqueName,
} from '../../support/stack';
import { putItems, scanAll, type Item } from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';
import { isolatedRunEnv, runCli, spawnCli, type CliResult } from '../../support/cli-process';

interface AuditLine {
  status: string;
  key: string;
  eventID: string | null;
}

interface AuditSummary {
  deletions: number;
  late: number;
  present: number;
  pending: number;
  held: number;
  breach: boolean;
  tableExists: boolean;
  tableReadVia: string;
  tableItemsRead: number;
  dropped: {
    lastDeletionAt: string | null;
    settingsChangedAt: string;
    settingsChangedBy: string;
    ttlEnabled: boolean;
  } | null;
}

function parseAudit(r: CliResult): { rows: AuditLine[]; summary: AuditSummary } {
  const lines = r.stdout.trim().split('\n');
  const last = JSON.parse(lines.pop() ?? '{}') as { summary?: AuditSummary };
  if (!last.summary) throw new Error(`audit printed no summary (exit ${r.code}):\n${r.stderr}`);
  return { rows: lines.map((l) => JSON.parse(l) as AuditLine), summary: last.summary };
}

/** The deletions of an audit, as (status, key, eventID): what must not change when the table goes. */
const deletionRows = (rows: AuditLine[]): string[] =>
  rows
    .filter((r) => r.eventID !== null)
    .map((r) => `${r.status} ${r.key} ${r.eventID}`)
    .sort();

/**
 * Audits that outlive the table: a real `ttlstream run` deletes and archives a table's expired
 * items, the table is dropped (DeleteTable), and then `audit` (JSON, text, CSV, HTML) still reports every archived
 * deletion with the same rows and exit code rules, says the table no longer exists and counts nothing present;
 * `archive verify`, `archive show` and `replay` work on its archive; `restore` into it fails with a clear error.
 */
describe('a dropped table: its archive still audits, verifies, shows and replays', () => {
  const table = uniqueName('audit-drop');
  const control = uniqueName('audit-drop-ctl');
  const marks = uniqueName('audit-drop-marks');
  const topic = uniqueName('audit-drop-rm');
  const replayTopic = uniqueName('audit-drop-replay');
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-audit-drop-'));
  const archiveDir = join(dir, 'archive');
  let ddb: DynamoDBClient;
  let kafka: Kafka;
  let env: NodeJS.ProcessEnv;
  let run: ReturnType<typeof spawnCli> | undefined;

  beforeAll(async () => {
    ddb = createDynamoClient(testConfig());
    kafka = createKafka(testConfig(), silentLogger);
    env = isolatedRunEnv({ control, marks, topic }, archiveDir);
    await createTestTable(ddb, table);
    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.code).toBe(0);
  });

  afterAll(async () => {
    if (run && run.exitCode === null && run.signalCode === null) {
      run.kill('SIGKILL');
      await run.result;
    }
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('audit, archive verify, archive show and replay read its deletions; restore refuses clearly', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const item = (pk: string, exp: number): Item => ({ pk: { S: pk }, exp: { N: String(exp) } });
    // SLA 10 min. On time: expired seconds ago. Late: expired 30 minutes ago. Alive: tomorrow.
    const onTime = Array.from({ length: 4 }, (_, i) => item(`soon-${i}`, nowS - 5));
    const late = Array.from({ length: 2 }, (_, i) => item(`late-${i}`, nowS - 1800));
    const alive = Array.from({ length: 3 }, (_, i) => item(`alive-${i}`, nowS + 86_400));
    await putItems(ddb, table, [...onTime, ...late, ...alive]);
    const window = ['--from', String(nowS - 3600), '--to', String(nowS + 3600), '--sla', '10m'];
    const audit = (extra: string[], from = window): Promise<CliResult> =>
      runCli(['audit', '--table', table, ...from, ...extra], env, 120_000);

    run = spawnCli(['run', '--roles', 'scanner,producer,archiver'], env);
    const started = run;
    await waitFor(
      'the 6 expired items deleted',
      async () => started.exitCode === null && (await scanAll(ddb, table)).size === alive.length,
      90_000,
      250,
    );
    // The audit reads deletions from the archive only: wait until the archiver's key indexes list all six.
    const storage = openArchiveStorage(testConfig({ archive: { url: `file://${archiveDir}` } }));
    await waitFor(
      'the 6 deletions archived',
      async () => {
        let removes = 0;
        for await (const row of openCatalog(storage).scan(table)) if (row.kind === 'remove') removes++;
        return removes === 6;
      },
      90_000,
      250,
    );
    started.kill('SIGTERM');
    expect((await started.result).code).toBe(0);
    // Expired 15 minutes ago, after the run stopped: overdue while the table exists.
    await putItems(ddb, table, [item('present-0', nowS - 900)]);

    const before = await audit(['--json']);
    expect(before.code).toBe(4);
    const live = parseAudit(before);
    expect(live.summary).toMatchObject({
      deletions: 6,
      late: 2,
      present: 1,
      tableExists: true,
      dropped: null,
    });

    await ddb.send(new DeleteTableCommand({ TableName: table }));
    await waitFor(
      `table ${table} gone`,
      async () => {
        try {
          await ddb.send(new DescribeTableCommand({ TableName: table }));
          return false;
        } catch (err) {
          if (err instanceof ResourceNotFoundException) return true;
          throw err;
        }
      },
      30_000,
      100,
    );

    // JSON: the same deletion rows as before the drop, nothing present, the table said to be gone; still a breach.
    const json = await audit(['--json']);
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 4, stderr: expect.any(String) });
    const gone = parseAudit(json);
    expect(gone.summary).toMatchObject({
      deletions: 6,
      late: 2,
      present: 0,
      pending: 0,
      held: 0,
      breach: true,
      tableExists: false,
      tableReadVia: 'none',
      tableItemsRead: 0,
    });
    expect(deletionRows(gone.rows)).toEqual(deletionRows(live.rows));
    expect(gone.rows.filter((r) => r.eventID === null)).toEqual([]);
    expect(gone.summary.dropped).toMatchObject({ ttlEnabled: true, settingsChangedBy: expect.any(String) });
    // The table existed at its last deletion: the bound the report gives on when it was dropped.
    const lastDeletion = Date.parse(gone.summary.dropped?.lastDeletionAt ?? '');
    expect(lastDeletion).toBeGreaterThanOrEqual((nowS - 1) * 1000);
    expect(lastDeletion).toBeLessThanOrEqual(Date.now());

    // Text: the table's state and the breach, on stdout.
    const text = await audit([]);
    expect(text.code).toBe(4);
    expect(text.stdout).toMatch(/table {16}no longer exists \(dropped after its last archived deletion, /);
    expect(text.stdout).toMatch(/still present {8}0 {2}\(the table no longer exists/);
    expect(text.stdout).toContain("deletions read with the table's last recorded TTL settings");
    expect(text.stdout).toContain('BREACH');

    // CSV: every deletion row on stdout, the summary (with the table's state) on stderr.
    const csv = await audit(['--csv']);
    expect(csv.code).toBe(4);
    expect(csv.stdout.trim().split('\n')).toHaveLength(1 + 6);
    expect(csv.stderr).toContain('no longer exists (dropped after its last archived deletion');

    // HTML: the page says the table no longer exists and lists no item present; the archive verifies.
    const file = join(dir, 'report.html');
    const html = await audit(['--html', file, '--hash-keys']);
    expect(html.code).toBe(4);
    const page = readFileSync(file, 'utf8');
    expect(page).toContain('data-figure="table-exists" data-value="no"');
    expect(figureText(page, 'table-exists')).toMatch(
      /^no longer exists \(dropped after its last archived deletion/,
    );
    expect(page).toMatch(/data-table="present" data-rows="0">None: the table no longer exists/);
    expect(figureText(page, 'deletions')).toBe('6');
    expect(figureText(page, 'present')).toBe('0');
    expect(figureText(page, 'verify')).toBe('passed');

    // Without the late deletions in the window nothing is a breach: no item can be overdue in a missing table.
    const onTimeOnly = await audit(
      ['--json'],
      ['--from', String(nowS - 600), '--to', String(nowS + 3600), '--sla', '10m'],
    );
    expect(onTimeOnly.code).toBe(0);
    expect(parseAudit(onTimeOnly).summary).toMatchObject({
      deletions: 4,
      late: 0,
      present: 0,
      breach: false,
    });

    // archive verify and archive show read the archive, not the table.
    const verify = await runCli(['archive', 'verify', '--table', table, '--json'], env);
    expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(JSON.parse(verify.stdout) as { ok: boolean; findings: unknown[] }).toMatchObject({
      ok: true,
      findings: [],
    });
    const show = await runCli(['archive', 'show', '--table', table, '--json'], env);
    expect(show.code).toBe(0);
    const shown = show.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { record: { eventID: string } | null });
    expect(shown.map((s) => s.record?.eventID).sort()).toEqual(gone.rows.map((r) => r.eventID).sort());

    // replay re-publishes them to a topic.
    const admin = kafka.admin();
    await admin.connect();
    try {
      await createTestTopic(admin, replayTopic, 1);
    } finally {
      await admin.disconnect();
    }
    const span = [
      '--from',
      new Date((nowS - 3600) * 1000).toISOString(),
      '--to',
      new Date(Date.now() + 3_600_000).toISOString(),
    ];
    const replay = await runCli(['replay', '--table', table, ...span, '--topic', replayTopic, '--json'], env);
    expect({ code: replay.code, stderr: replay.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(JSON.parse(replay.stdout) as { published: number }).toMatchObject({ published: 6 });
    const offsets = await (async () => {
      const a = kafka.admin();
      await a.connect();
      try {
        return await a.fetchTopicOffsets(replayTopic);
      } finally {
        await a.disconnect();
      }
    })();
    expect(offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0)).toBe(6);

    // restore needs a table to write into: a clear error, and no table appears.
    const restore = await runCli(['restore', '--table', table, ...span], env);
    expect(restore.code).toBe(1);
    expect(restore.stderr).toContain(
      `ttlstream: table ${table} does not exist: restore writes into an existing table`,
    );
    await expect(ddb.send(new DescribeTableCommand({ TableName: table }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
  }, 360_000);
});
