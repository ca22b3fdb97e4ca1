import { PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../core/clients';
import { createTableWithExpiryIndex } from '../../support/expiry-index';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { runCli } from '../../support/cli-process';

/**
 * `ttlstream ttl update --expiry-index` and `ttlstream index …` as an operator runs them. `index create` sends the
 * real UpdateTable GSI Create, which dynalite refuses (docs/decisions/0011); the lifecycle is shown on a table
 * created with the index: BACKFILLING until `index backfill` completes, then ACTIVE.
 */
describe('ttlstream index (real DynamoDB API)', () => {
  const control = uniqueName('cli-idx-ctl').replace(/-/g, '_');
  const env = { TTLSTREAM_TABLES_CONTROL: control, TTLSTREAM_API_TTL_PROPAGATION_MS: '0' };
  let ddb: DynamoDBClient;
  const tables: string[] = [];

  beforeAll(() => {
    ddb = createDynamoClient(testConfig());
  });
  afterAll(async () => {
    for (const t of [...tables, control]) await deleteTestTable(ddb, t);
    ddb.destroy();
  });

  it('ttl update --expiry-index, index describe, backfill --dry-run, backfill, ACTIVE', async () => {
    const t = uniqueName('cli-idx');
    const settings = {
      policy: { mode: 'dynamodb' as const, attributeName: 'exp' },
      expiryIndex: { shards: 4 },
    };
    await createTableWithExpiryIndex(ddb, t, settings);
    tables.push(t);
    for (let i = 0; i < 40; i++)
      await ddb.send(
        new PutItemCommand({ TableName: t, Item: { pk: { S: `i${i}` }, exp: { N: '2000000000' } } }),
      );

    const update = await runCli(
      ['ttl', 'update', '--table', t, '--enable', '--attribute', 'exp', '--expiry-index=4'],
      env,
    );
    expect(update.code).toBe(0);
    const ttl = JSON.parse((await runCli(['ttl', 'describe', '--table', t, '--json'], env)).stdout) as {
      settings: { expiryIndex?: { shards: number } };
    };
    expect(ttl.settings.expiryIndex).toEqual({ shards: 4 });

    const before = await runCli(['index', 'describe', '--table', t, '--json'], env);
    expect(JSON.parse(before.stdout)).toMatchObject({ status: 'BACKFILLING' });
    expect((await runCli(['ttl', 'describe', '--table', t], env)).stdout).toMatch(/index\s+BACKFILLING/);

    const dry = await runCli(
      ['index', 'backfill', '--table', t, '--dry-run', '--segments', '2', '--json'],
      env,
    );
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, stamped: 40, scanned: 40 });

    const real = await runCli(['index', 'backfill', '--table', t, '--segments', '2'], env);
    expect(real.code).toBe(0);
    expect(real.stdout).toMatch(/stamped\s+40/);
    const after = await runCli(['index', 'describe', '--table', t], env);
    expect(after.stdout).toMatch(/status\s+ACTIVE/);
    // ttl describe (and so GET /tables/:table/ttl, the same description) carries the index status.
    expect((await runCli(['ttl', 'describe', '--table', t], env)).stdout).toMatch(
      /index\s+ACTIVE \(4 shards\)/,
    );
    const described = JSON.parse(
      (await runCli(['ttl', 'describe', '--table', t, '--json'], env)).stdout,
    ) as object;
    expect(described).toMatchObject({ expiryIndex: { status: 'ACTIVE', shards: 4 } });
  });

  it('index create refuses a table whose TTL settings have no expiry index, naming the fix', async () => {
    const t = await createTestTable(ddb, uniqueName('cli-idx-no'));
    tables.push(t);
    expect((await runCli(['ttl', 'update', '--table', t, '--enable', '--attribute', 'exp'], env)).code).toBe(
      0,
    );
    const r = await runCli(['index', 'create', '--table', t], env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--expiry-index/);
  });
});
