import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { createDynamoClient } from '../../../core/clients';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { freePort, isolatedRunEnv, runCli, spawnCli } from '../../support/cli-process';
import { expiredAndAlive, putItems, scanAll } from '../../support/pipeline-harness';
import { startPrometheus, type PrometheusProcess } from './prometheus-process.support';
import { waitFor } from '../../support/wait-for';

const ROOT = resolve(__dirname, '..', '..', '..');
const RULES = join(ROOT, 'deploy', 'prometheus', 'ttlstream-rules.yml');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'ttlstream.json');

/**
 * Series that exist only once something went wrong (a retry, a failed request, a loss, a dead letter): a healthy run
 * has none, so expressions over them are checked to parse (and their names against core/metrics.ts by the unit
 * test), not to return series.
 */
const EVENT_ONLY = [
  'ttlstream_sdk_retries_total',
  'ttlstream_sdk_errors_total',
  'ttlstream_archiver_lost_records_total',
  'ttlstream_archiver_loss',
  'ttlstream_archiver_dead_letter_total',
  'ttlstream_archiver_roll_errors_total',
];

/**
 * The streams role's series (ttlstream_streams_*) exist only while it follows a table whose deleter is DynamoDB's own
 * TTL: that needs DynamoDB Streams (moto's server), which this suite's processes do not use. streams/follow.test.ts
 * scrapes them from a streams process; here their expressions are checked to parse.
 */
const STREAMS_ROLE = 'ttlstream_streams_';

/** Whether an expression (or a metric name) reads series a healthy run of this suite's roles has. */
const seriesExpected = (expr: string): boolean =>
  !EVENT_ONLY.some((m) => expr.includes(m)) && !expr.includes(STREAMS_ROLE);

/** waitFor, with the processes' output in the error. */
function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  log: () => string,
): Promise<T> {
  return waitFor(what, probe, ms, 250).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${log()}`);
  });
}

const count = async (ddb: DynamoDBClient, table: string): Promise<number> => (await scanAll(ddb, table)).size;

/** Every PromQL expression of the rules file and of the dashboard (template variables filled in), with where it is. */
function expressions(): Array<{ where: string; expr: string; alert: boolean }> {
  const rules = parse(readFileSync(RULES, 'utf8')) as {
    groups: Array<{ rules: Array<{ record?: string; alert?: string; expr: string }> }>;
  };
  const out = rules.groups.flatMap((g) =>
    g.rules.map((r) => ({
      where: `rule ${r.alert ?? r.record}`,
      expr: r.expr,
      alert: r.alert !== undefined,
    })),
  );
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Array<{ title: string; targets: Array<{ refId: string; expr: string }> }>;
  };
  for (const p of dashboard.panels)
    for (const t of p.targets)
      out.push({
        where: `panel "${p.title}" ${t.refId}`,
        expr: t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$table', '.*'),
        alert: false,
      });
  return out;
}

const TOKEN = 'obs-test-token-0123456789';

/**
 * A real Prometheus scraping two real `ttlstream run` processes with the project's rules loaded, as a deployment
 * runs the roles apart: the producer (with the archiver) in one, the scanner and the API in the other. The producer's
 * deletion-rate guard pauses one of two tables, and TtlstreamGuardPaused fires for that table only, through the
 * Prometheus HTTP API; an operator confirms through the other process's API, which the producer never hears of, and
 * the alert ends. Then every expression of the rules and of the Grafana dashboard is run against what Prometheus
 * scraped.
 */
describe('Prometheus scraping ttlstream run: rules and dashboard', () => {
  const paused = uniqueName('obs-paused');
  const normal = uniqueName('obs-normal');
  const control = uniqueName('obs-ctl');
  const marks = uniqueName('obs-marks');
  const topic = uniqueName('obs-rm');
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-prometheus-'));
  let ddb: DynamoDBClient;
  let env: NodeJS.ProcessEnv;
  const runs: Array<ReturnType<typeof spawnCli>> = [];
  let prometheus: PrometheusProcess | undefined;
  const log = (): string =>
    runs.map((r, i) => `--- ttlstream run ${i}:\n${r.output().slice(-3000)}\n`).join('') +
    `--- prometheus:\n${prometheus?.output().slice(-4000) ?? ''}`;

  beforeAll(async () => {
    ddb = createDynamoClient(testConfig());
    env = isolatedRunEnv({ control, marks, topic }, join(dir, 'archive'), {
      // The producer pauses a table before it deletes more than 5 items in a minute: 15 at once do, 3 do not. One
      // mark shard, so a table's marks come in one batch and the pause comes before any of them is deleted.
      TTLSTREAM_GUARD_MAX_DELETES_PER_MINUTE: '5',
      TTLSTREAM_PRODUCER_SHARDS: '1',
      TTLSTREAM_GUARD_GAUGE_REFRESH_MS: '1000',
      TTLSTREAM_API_TOKENS: TOKEN,
    });
    for (const t of [paused, normal]) await createTestTable(ddb, t);
    await putItems(ddb, paused, expiredAndAlive('exp', 15, 5, { expiredForS: 60, aliveForS: 86_400 }));
    await putItems(ddb, normal, expiredAndAlive('exp', 3, 17, { expiredForS: 60, aliveForS: 86_400 }));
    for (const t of [paused, normal]) {
      const enable = await runCli(['ttl', 'update', '--table', t, '--enable', '--attribute', 'exp'], env);
      expect(enable.code).toBe(0);
    }
  });

  afterAll(async () => {
    for (const run of runs)
      if (run.exitCode === null && run.signalCode === null) {
        run.kill('SIGTERM');
        await Promise.race([run.result, sleep(30_000).then(() => run.kill('SIGKILL'))]);
      }
    await prometheus?.stop();
    for (const t of [paused, normal, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fires TtlstreamGuardPaused for the paused table only, and ends it when an operator confirms through another process', async () => {
    const metricsPort = await freePort();
    const apiPort = await freePort();
    // The process that pauses (the producer) and the one that takes the confirm (the API) are not the same.
    runs.push(
      spawnCli(['run', '--roles', 'producer,archiver'], {
        ...env,
        TTLSTREAM_METRICS_PORT: String(metricsPort),
      }),
      spawnCli(['run', '--roles', 'scanner,api'], { ...env, TTLSTREAM_API_PORT: String(apiPort) }),
    );
    prometheus = await startPrometheus({
      dir,
      targets: [`127.0.0.1:${metricsPort}`, `127.0.0.1:${apiPort}`],
      ruleFiles: [RULES],
    });
    const prom = prometheus;
    const guardAlerts = async () =>
      (await prom.alerts()).filter((a) => a.labels.alertname === 'TtlstreamGuardPaused');

    // The normal table is worked off: its 3 expired items go, nothing fires for it.
    await until(
      'the normal table deleted',
      async () => ((await count(ddb, normal)) === 17 ? true : undefined),
      90_000,
      log,
    );
    const firing = await until(
      'TtlstreamGuardPaused firing',
      async () => {
        const alerts = (await guardAlerts()).filter((a) => a.state === 'firing');
        return alerts.length > 0 ? alerts : undefined;
      },
      90_000,
      log,
    );
    expect(firing.map((a) => a.labels)).toEqual([
      { alertname: 'TtlstreamGuardPaused', severity: 'page', table: paused },
    ]);
    expect(firing[0]?.annotations).toMatchObject({
      summary: `ttlstream: the mass-deletion guard paused table ${paused}`,
      runbook_url: 'https://ttlstream.invalid/docs/operations.md#ttlstreamguardpaused',
    });
    // What the alert says is what the control plane says, and nothing of the paused table was deleted.
    const status = await runCli(['guard', 'status', '--table', paused, '--json'], env);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'PAUSED' });
    expect(JSON.parse(status.stdout).reason).toMatch(/exceed maxDeletesPerMinute 5/);
    expect(await count(ddb, paused)).toBe(20);
    expect(await prom.query(`ttlstream_guard_paused{table="${normal}"} == 1`)).toEqual([]);
    // Only the producer reports the gauge (the scanner and API process do not): from the control table.
    expect(
      (await prom.query(`ttlstream_guard_paused{table="${paused}"}`)).map((s) => [
        s.metric.instance,
        s.value[1],
      ]),
    ).toEqual([[`127.0.0.1:${metricsPort}`, '1']]);

    const confirm = await fetch(`http://127.0.0.1:${apiPort}/tables/${paused}/guard/confirm`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(confirm.status).toBe(200);
    await until(
      'the paused table deleted after confirm',
      async () => ((await count(ddb, paused)) === 5 ? true : undefined),
      60_000,
      log,
    );
    await until(
      'TtlstreamGuardPaused resolved',
      async () => ((await guardAlerts()).length === 0 ? true : undefined),
      60_000,
      log,
    );
  }, 300_000);

  it('runs every expression of the rules and the dashboard: each parses, and each returns series unless its series only exist after a failure', async () => {
    const prom = prometheus;
    if (!prom) throw new Error('the first test did not start Prometheus');
    const all = expressions();
    expect(all.length).toBeGreaterThan(20);
    // Every expression parses and evaluates now.
    for (const e of all) await expect(prom.query(e.expr).then(() => e.where)).resolves.toBe(e.where);
    // The deletions above (18, over two tables) are in the histogram and counters; the archiver owns partitions.
    // Wait until every expression that should return series does (rates need two scrapes after the first sample).
    const expected = all.filter((e) => !e.alert && seriesExpected(e.expr));
    expect(expected.length).toBeGreaterThan(15);
    const empty = async (): Promise<string[]> => {
      const out: string[] = [];
      for (const e of expected)
        if ((await prom.query(e.expr)).length === 0) out.push(`${e.where}: ${e.expr}`);
      return out;
    };
    let last: string[] = [];
    await until(
      'series for every expression',
      async () => {
        last = await empty();
        return last.length === 0 ? true : undefined;
      },
      60_000,
      () => `still empty:\n${last.join('\n')}\n${log()}`,
    );
    // The alerts' own series (all but the event-only ones) are scraped too, so each alert is one comparison away from
    // firing: the names in their expressions are the ones the process exposes.
    const names = new Set(
      all.filter((e) => e.alert).flatMap((e) => e.expr.match(/\bttlstream_[a-z0-9_]+/g) ?? []),
    );
    for (const name of [...names].filter(seriesExpected))
      expect({ name, series: (await prom.query(name)).length > 0 }).toEqual({ name, series: true });
    expect((await prom.query('up{job="ttlstream"} == 1')).length).toBe(2);
  }, 120_000);
});
