import { CreateTableCommand, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TtlstreamClient } from '../../../client';
import { createDynamoClient } from '../../../core/clients';
import { OPEN_PATHS, OPENAPI_PATH } from '../../../control/api/openapi';
import { runDir } from '../../support/ports';
import { testConfig, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';
import { freePort, spawnCli } from '../../support/cli-process';

/**
 * Schemathesis (scripts/ensure-api-tools.sh) fuzzes a live `ttlstream run --roles api` on this lane's stack from the
 * server's own OpenAPI document: every operation, in all four phases (the document's examples, its coverage of
 * boundaries and of invalid input, random fuzzing, and stateful sequences that follow the document's links from a
 * PUT of a table to the reads of the same table), with a fixed seed and a bounded number of examples per operation
 * so that the run is the same every time and small enough for CI. Any failure of a check fails the suite, and is
 * fixed in the product, never by loosening the document.
 */

const run = promisify(execFile);
const SCHEMATHESIS = join(runDir(), 'api-tools', 'bin', 'schemathesis');
const TOKEN = 'schemathesis-token-0123456789';
/**
 * `--checks all`: every check schemathesis 4.32.5 has, each of which must run and pass. Among them
 * `unsupported_method` sends each path the methods its operations do not have (405 with `Allow`, RFC 9110),
 * `positive_data_acceptance` valid input, `missing_required_header` and `ignored_auth` a request without and with a
 * wrong token; `use_after_free`, `allow_header_conformance` and `object_level_authorization` find nothing to act on
 * here (no DELETE, no OPTIONS answers, no object ids) and pass.
 */
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
  'negative_data_rejection',
  'positive_data_acceptance',
  'missing_required_header',
  'unsupported_method',
  'allow_header_conformance',
  'use_after_free',
  'ensure_resource_availability',
  'ignored_auth',
  'object_level_authorization',
  'max_response_time',
] as const;
const SEED = 20261203;
/** Examples per operation: 494 requests with a token (10 s), 402 without (7 s), on two vCPUs. */
const EXAMPLES = 10;
const EXAMPLES_UNAUTHENTICATED = 5;
/** The table the document's examples name (control/api/schemas.ts TableNameSchema). */
const EXAMPLE_TABLE = 'orders';

interface Interaction {
  request: { method: string; uri: string };
  response?: { status_code: number };
}
interface Scenario {
  recorder: {
    label: string;
    interactions?: Record<string, Interaction>;
    checks?: Record<string, Array<{ name: string; status: string }>>;
  };
}

interface RunSummary {
  exitCode: number;
  output: string;
  requests: Interaction[];
  checks: Map<string, { passed: number; failed: number }>;
  seconds: number;
}

/** Runs schemathesis against the live API and reads back what it did from its NDJSON report. */
async function schemathesis(
  base: string,
  options: { token?: string; examples: number },
): Promise<RunSummary> {
  const dir = mkdtempSync(join(tmpdir(), 'schemathesis-'));
  const started = Date.now();
  const args = [
    'run',
    `${base}${OPENAPI_PATH}`,
    '--checks',
    'all',
    '--seed',
    String(SEED),
    '--max-examples',
    String(options.examples),
    '--workers',
    '1',
    '--generation-database',
    'none',
    '--request-timeout',
    '10',
    '--no-color',
    '--report',
    'ndjson',
    '--report-dir',
    dir,
    // Without a token no PUT succeeds, so there are no links to follow: the stateful phase would repeat the fuzzing.
    ...(options.token
      ? ['--header', `Authorization: Bearer ${options.token}`]
      : ['--phases', 'examples,coverage,fuzzing']),
  ];
  let exitCode = 0;
  let output = '';
  try {
    const r = await run(SCHEMATHESIS, args, { cwd: dir, timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
    output = r.stdout + r.stderr;
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    exitCode = typeof e.code === 'number' ? e.code : 1;
    output = `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
  const seconds = (Date.now() - started) / 1000;
  const requests: Interaction[] = [];
  const checks = new Map<string, { passed: number; failed: number }>();
  try {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ndjson')))
      for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
        if (line.trim() === '') continue;
        const event = JSON.parse(line) as { ScenarioFinished?: Scenario };
        const recorder = event.ScenarioFinished?.recorder;
        if (!recorder) continue;
        requests.push(...Object.values(recorder.interactions ?? {}));
        for (const results of Object.values(recorder.checks ?? {}))
          for (const c of results) {
            const tally = checks.get(c.name) ?? { passed: 0, failed: 0 };
            if (c.status === 'success') tally.passed++;
            else tally.failed++;
            checks.set(c.name, tally);
          }
      }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { exitCode, output, requests, checks, seconds };
}

function summaryOf(what: string, r: RunSummary): string {
  const checks = [...r.checks]
    .map(([name, t]) => `${name} ${t.passed} passed, ${t.failed} failed`)
    .join('; ');
  return `schemathesis ${what} (seed ${SEED}): ${r.requests.length} requests in ${r.seconds.toFixed(1)} s; checks: ${checks}`;
}

/** `GET /tables/orders/ttl` → the document's path template it was made from, or undefined (an undocumented one). */
function operationOf(
  request: Interaction['request'],
  operations: Array<{ method: string; path: RegExp; template: string }>,
): string | undefined {
  const path = new URL(request.uri).pathname;
  return operations.find((o) => o.method === request.method && o.path.test(path))?.template;
}

describe('schemathesis against a live `ttlstream run --roles api`', () => {
  let api: ReturnType<typeof spawnCli>;
  let base: string;
  let client: TtlstreamClient;
  let operations: Array<{ method: string; path: RegExp; template: string }>;

  beforeAll(async () => {
    if (!existsSync(SCHEMATHESIS))
      throw new Error(`${SCHEMATHESIS} is missing: run \`bash scripts/ensure-api-tools.sh\``);
    const config = testConfig();
    const ddb = createDynamoClient(config);
    try {
      await ddb.send(
        new CreateTableCommand({
          TableName: EXAMPLE_TABLE,
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
    } catch (err) {
      if (!(err instanceof ResourceInUseException)) throw err;
    } finally {
      ddb.destroy();
    }
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    api = spawnCli(['run', '--roles', 'api'], {
      TTLSTREAM_API_HOST: '127.0.0.1',
      TTLSTREAM_API_PORT: String(port),
      TTLSTREAM_API_TOKENS: TOKEN,
      // Changes settle at once, so that a PUT's follow-ups (links) meet ENABLED tables, not 409s.
      TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
      TTLSTREAM_TABLES_CONTROL: uniqueName('st-ctl'),
      TTLSTREAM_TABLES_MARKS: uniqueName('st-marks'),
    });
    client = new TtlstreamClient({ baseUrl: base, token: TOKEN });
    await waitFor('the API to be ready', () => client.ready(), 60_000);
    // The preview and the guard have something to work on from the first example on.
    await client.putTtl(EXAMPLE_TABLE, {
      enabled: true,
      settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } },
    });
    const doc = (await (await fetch(`${base}${OPENAPI_PATH}`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    operations = Object.entries(doc.paths).flatMap(([template, item]) =>
      Object.keys(item).map((method) => ({
        method: method.toUpperCase(),
        template,
        path: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
      })),
    );
  }, 90_000);

  afterAll(async () => {
    if (api && api.exitCode === null) {
      api.kill('SIGTERM');
      await api.result;
    }
  });

  it('finds no failure of any check with a token, in every phase', async () => {
    const before = await client.metrics();
    const r = await schemathesis(base, { token: TOKEN, examples: EXAMPLES });
    console.log(summaryOf('with a token', r));
    expect({ exitCode: r.exitCode, failures: r.output.includes('FAILURES') ? r.output : '' }).toEqual({
      exitCode: 0,
      failures: '',
    });
    expect([...r.checks.keys()].sort()).toEqual([...CHECKS].sort());
    for (const [, t] of r.checks) expect(t.failed).toBe(0);
    // The methods a path's operations do not have were sent, and each was answered 405 (Allow: the unit test).
    const undocumented = r.requests.filter(
      (i) =>
        operationOf(i.request, operations) === undefined &&
        operations.some((o) => o.path.test(new URL(i.request.uri).pathname)),
    );
    expect(undocumented.length).toBeGreaterThanOrEqual(operations.length - 1);
    expect(new Set(undocumented.map((i) => i.response?.status_code))).toEqual(new Set([405]));
    // Every documented operation was called, and answered something else than 401 at least once.
    const reached = new Set(
      r.requests
        .filter((i) => i.response !== undefined && i.response.status_code !== 401)
        .map((i) => operationOf(i.request, operations)),
    );
    // Schemathesis leaves out the document's own URL; the unauthenticated test reads it.
    for (const o of operations) if (o.template !== OPENAPI_PATH) expect(reached).toContain(o.template);
    expect(r.requests.filter((i) => (i.response?.status_code ?? 0) >= 500)).toEqual([]);
    // The server counted them too (ttlstream_api_requests_total), a check on the report's own count.
    const counted = (text: string): number =>
      text
        .split('\n')
        .filter((l) => l.startsWith('ttlstream_api_requests_total{'))
        .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    expect(counted(await client.metrics()) - counted(before)).toBeGreaterThanOrEqual(r.requests.length);
  }, 300_000);

  it('without a token, every operation but the open ones answers 401, and none answers 5xx', async () => {
    const r = await schemathesis(base, { examples: EXAMPLES_UNAUTHENTICATED });
    console.log(summaryOf('without a token', r));
    expect({ exitCode: r.exitCode, failures: r.output.includes('FAILURES') ? r.output : '' }).toEqual({
      exitCode: 0,
      failures: '',
    });
    const answers = new Map<string, Set<number>>();
    for (const i of r.requests) {
      const op = operationOf(i.request, operations);
      if (op === undefined || i.response === undefined) continue; // a method the document does not have
      const key = `${i.request.method} ${op}`;
      answers.set(key, (answers.get(key) ?? new Set()).add(i.response.status_code));
    }
    expect((await fetch(`${base}${OPENAPI_PATH}`)).status).toBe(200);
    for (const o of operations.filter((op) => op.template !== OPENAPI_PATH)) {
      const statuses = [...(answers.get(`${o.method} ${o.template}`) ?? [])];
      expect({ operation: `${o.method} ${o.template}`, called: statuses.length > 0 }).toEqual({
        operation: `${o.method} ${o.template}`,
        called: true,
      });
      if ((OPEN_PATHS as readonly string[]).includes(o.template))
        expect({ operation: o.template, statuses }).toEqual({
          operation: o.template,
          statuses: statuses.filter((s) => s !== 401 && s < 500),
        });
      else
        expect({ operation: `${o.method} ${o.template}`, statuses }).toEqual({
          operation: `${o.method} ${o.template}`,
          statuses: [401],
        });
    }
  }, 300_000);
});
