import { PutItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../core/clients';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { humanLines, runCli } from '../../support/cli-process';

/** `ttlstream ttl …` and `preview` as an operator runs them: a child process against the real DynamoDB API. */
describe('ttlstream ttl / preview (real DynamoDB API)', () => {
  const control = uniqueName('cli-ctl').replace(/-/g, '_');
  const env = { TTLSTREAM_TABLES_CONTROL: control, TTLSTREAM_API_TTL_PROPAGATION_MS: '500' };
  let ddb: DynamoDBClient;
  const tables: string[] = [];

  beforeAll(() => {
    ddb = createDynamoClient(testConfig());
  });
  afterAll(async () => {
    for (const t of [...tables, control]) await deleteTestTable(ddb, t);
    ddb.destroy();
  });

  /** Polls `ttl describe --json` until the table's TTL is ENABLED (propagation is 500 ms here). */
  async function waitEnabled(t: string, e: NodeJS.ProcessEnv = env): Promise<Record<string, unknown>> {
    for (let i = 0; ; i++) {
      const r = await runCli(['ttl', 'describe', '--table', t, '--json'], e);
      if (r.code !== 0) throw new Error(`ttl describe exited ${r.code}: ${r.stderr}`);
      const d = JSON.parse(r.stdout) as Record<string, unknown>;
      if (d.status === 'ENABLED' || i >= 30) return d;
      await new Promise((res) => setTimeout(res, 500));
    }
  }

  async function table(): Promise<string> {
    const name = await createTestTable(ddb, uniqueName('cli-ttl'));
    tables.push(name);
    return name;
  }

  it('update --enable, describe, list and --disable, with --json shapes', async () => {
    const t = await table();
    // Long enough that the second command (a child process start away) lands while ENABLING.
    const slow = { ...env, TTLSTREAM_API_TTL_PROPAGATION_MS: '6000' };
    const enable = await runCli(
      [
        'ttl',
        'update',
        '--table',
        t,
        '--enable',
        '--attribute',
        'expiresAt',
        '--legal-hold-attribute',
        'hold',
        '--json',
      ],
      slow,
    );
    expect(enable.code).toBe(0);
    const enabled = JSON.parse(enable.stdout) as Record<string, unknown>;
    expect(enabled).toMatchObject({
      table: t,
      status: 'ENABLING',
      settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' }, legalHoldAttribute: 'hold' },
    });
    expect(enabled.changedBy).toMatch(/^cli:/);
    expect(typeof enabled.changedAt).toBe('number');
    expect(typeof enabled.statusSettlesAt).toBe('number');

    // A second change while ENABLING is refused with DynamoDB's wording: a failure (1), not a usage error.
    const again = await runCli(['ttl', 'update', '--table', t, '--disable'], slow);
    expect(again.code).toBe(1);
    expect(humanLines(again.stderr)).toEqual([
      'ttlstream: Time to live has been modified multiple times within a fixed interval',
    ]);

    expect(await waitEnabled(t, slow)).toMatchObject({ table: t, status: 'ENABLED' });

    const human = await runCli(['ttl', 'describe', '--table', t], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^status\s+ENABLED$/m);
    expect(human.stdout).toMatch(/^settings\s+dynamodb on expiresAt; legal hold hold$/m);

    const list = await runCli(['ttl', 'list', '--json'], env);
    expect(list.code).toBe(0);
    const all = JSON.parse(list.stdout) as Array<{ table: string; status: string }>;
    expect(all.find((d) => d.table === t)).toMatchObject({ status: 'ENABLED' });
    expect(all.some((d) => d.table === control)).toBe(false); // ttlstream's own table is hidden

    const disable = await runCli(['ttl', 'update', '--table', t, '--disable', '--json'], env);
    expect(disable.code).toBe(0);
    expect(JSON.parse(disable.stdout)).toMatchObject({ status: 'DISABLING' });
  });

  it('the flag form keeps the stored archive retention, legal hold and expiry index; --settings replaces them', async () => {
    const t = await table();
    const settings = {
      policy: { mode: 'dynamodb', attributeName: 'exp' },
      legalHoldAttribute: 'hold',
      archiveRetentionDays: 30,
      expiryIndex: { shards: 4 },
    };
    const ttl = (...args: string[]) => runCli(['ttl', 'update', '--table', t, ...args, '--json'], env);
    const settled = async (): Promise<Record<string, unknown>> => {
      for (let i = 0; ; i++) {
        const d = JSON.parse(
          (await runCli(['ttl', 'describe', '--table', t, '--json'], env)).stdout,
        ) as Record<string, unknown>;
        if (d.status === 'ENABLED' || d.status === 'DISABLED' || i >= 30) return d;
        await new Promise((res) => setTimeout(res, 500));
      }
    };
    expect((await ttl('--enable', '--settings', JSON.stringify(settings))).code).toBe(0);
    await settled();
    // Re-enabling with flags (same attribute) while ENABLED changes nothing.
    expect((await ttl('--enable', '--attribute', 'exp')).code).toBe(0);
    expect((await settled()).settings).toEqual(settings);
    expect((await ttl('--disable')).code).toBe(0);
    expect((await settled()).status).toBe('DISABLED');
    expect((await ttl('--enable', '--attribute', 'exp')).code).toBe(0);
    expect((await settled()).settings).toEqual(settings);
    // A flag given wins; --settings is the whole object.
    expect((await ttl('--enable', '--attribute', 'exp', '--legal-hold-attribute', 'hold2')).code).toBe(0);
    expect((await settled()).settings).toEqual({ ...settings, legalHoldAttribute: 'hold2' });
    expect((await ttl('--enable', '--settings', JSON.stringify({ policy: settings.policy }))).code).toBe(0);
    expect((await settled()).settings).toEqual({ policy: settings.policy });
  });

  it('mongo mode: enable with flags, then change expireAfterSeconds in place', async () => {
    const t = await table();
    const enable = await runCli(
      [
        'ttl',
        'update',
        '--table',
        t,
        '--enable',
        '--mode',
        'mongo',
        '--time-field',
        'createdAt',
        '--time-format',
        'iso-8601',
        '--expire-after-seconds',
        '3600',
        '--json',
      ],
      env,
    );
    expect(enable.code).toBe(0);
    await waitEnabled(t);
    const modify = await runCli(
      ['ttl', 'update', '--table', t, '--expire-after-seconds', '60', '--json'],
      env,
    );
    expect(modify.code).toBe(0);
    expect(JSON.parse(modify.stdout)).toMatchObject({
      status: 'ENABLED',
      settings: {
        policy: { mode: 'mongo', timeField: 'createdAt', timeFormat: 'iso-8601', expireAfterSeconds: 60 },
      },
    });
  });

  it('preview --json counts exactly what the policy says on a seeded table', async () => {
    const t = await table();
    const now = Math.floor(Date.now() / 1000);
    const items: Array<Record<string, AttributeValue>> = [
      { pk: { S: 'expired-1' }, exp: { N: String(now - 10) } },
      { pk: { S: 'expired-2' }, exp: { N: String(now - 3600) } },
      { pk: { S: 'soon' }, exp: { N: String(now + 600) } },
      { pk: { S: 'later' }, exp: { N: String(now + 3 * 86_400) } },
      { pk: { S: 'string' }, exp: { S: 'tomorrow' } },
      { pk: { S: 'ancient' }, exp: { N: String(now - 6 * 365 * 86_400) } },
      { pk: { S: 'millis' }, exp: { N: String(Date.now() + 60_000) } },
      { pk: { S: 'held' }, exp: { N: String(now - 10) }, hold: { BOOL: true } },
      { pk: { S: 'no-ttl' } },
    ];
    for (const item of items) await ddb.send(new PutItemCommand({ TableName: t, Item: item }));
    expect(
      (
        await runCli(
          ['ttl', 'update', '--table', t, '--enable', '--attribute', 'exp', '--legal-hold-attribute', 'hold'],
          env,
        )
      ).code,
    ).toBe(0);
    await waitEnabled(t);

    const r = await runCli(['preview', '--table', t, '--within', '1h', '--json'], env);
    expect(r.code).toBe(0);
    const preview = JSON.parse(r.stdout) as Record<string, unknown> & { sampleKeys: unknown[] };
    expect(preview).toMatchObject({
      table: t,
      scanned: 9,
      expiredNow: 2,
      expiringWithin: 1,
      held: 1,
      looksLikeMillis: 1,
      ignored: { 'wrong-type': 1, 'older-than-5-years': 1, malformed: 0, 'item-ttl-null': 0 },
      truncated: false,
      withinSeconds: 3600,
    });
    expect(preview.sampleKeys).toHaveLength(3);

    // Trial settings before enabling: another attribute name sees nothing subject to TTL.
    const trial = await runCli(
      ['preview', '--table', t, '--within', '2d', '--attribute', 'other', '--json'],
      env,
    );
    expect(trial.code).toBe(0);
    expect(JSON.parse(trial.stdout)).toMatchObject({ scanned: 9, expiredNow: 0, expiringWithin: 0 });

    const human = await runCli(['preview', '--table', t, '--within', '1h'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^expired now\s+2$/m);
    expect(human.stdout).toMatch(/^looks like millis\s+1/m);
  });

  it('exit codes: unknown table → 1, bad configuration value → 2, bad flag value → 2; one line on stderr each', async () => {
    const missing = await runCli(['ttl', 'describe', '--table', uniqueName('cli-missing')], env);
    expect(missing.code).toBe(1);
    expect(humanLines(missing.stderr)).toHaveLength(1);
    expect(missing.stderr).toMatch(/^ttlstream: .*not found/m);

    const previewMissing = await runCli(
      ['preview', '--table', uniqueName('cli-missing'), '--attribute', 'exp'],
      env,
    );
    expect(previewMissing.code).toBe(1);

    const badConfig = await runCli(['ttl', 'list'], { ...env, TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '0' });
    expect(badConfig.code).toBe(2);
    expect(humanLines(badConfig.stderr)).toEqual([
      expect.stringMatching(/^ttlstream: scanner\.totalSegments \(TTLSTREAM_SCANNER_TOTAL_SEGMENTS\): /),
    ]);

    const badDuration = await runCli(['preview', '--table', 'whatever', '--within', 'soon'], env);
    expect(badDuration.code).toBe(2);
    expect(badDuration.stderr).toMatch(
      /^ttlstream: option '-w, --within <duration>' argument 'soon' is invalid/,
    );

    const missingFlag = await runCli(
      ['ttl', 'update', '--table', 'whatever', '--enable', '--mode', 'cosmos'],
      env,
    );
    expect(missingFlag.code).toBe(2);
    expect(humanLines(missingFlag.stderr)).toEqual([
      'ttlstream: --default-ttl is required with --mode cosmos',
    ]);
  });
});
