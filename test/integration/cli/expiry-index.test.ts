import { PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../core/clients';
import { createTableWithExpiryIndex } from '../../support/expiry-index';
import { DYNAMO_SERVERS, caseOn, serverConfig, serverEnv } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, uniqueName } from '../../support/stack';
import { cli } from '../../support/cli';
import { runCli } from '../../support/cli-process';

/**
 * `ttlstream ttl update --expiry-index` and `ttlstream index …` as an operator runs them. `index create` sends the
 * real UpdateTable GSI Create, which dynalite refuses (docs/decisions/0011): on dynalite the lifecycle is shown on a
 * table created with the index, on moto's server from `index create` on: BACKFILLING until `index backfill`
 * completes, then ACTIVE, and NONE again after `index drop`.
 */
describe.each(DYNAMO_SERVERS)('ttlstream index (%s)', (server) => {
  const control = uniqueName('cli-idx-ctl').replace(/-/g, '_');
  const env = {
    ...serverEnv(server),
    TTLSTREAM_TABLES_CONTROL: control,
    TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
  };
  let ddb: DynamoDBClient;
  const tables: string[] = [];
  const onMotoBelow = { moto: 'the case below runs the lifecycle on moto from a real index create' };

  beforeAll(() => {
    ddb = createDynamoClient(serverConfig(server));
  });
  afterAll(async () => {
    for (const t of [...tables, control]) await deleteTestTable(ddb, t);
    ddb.destroy();
  });

  caseOn(server, onMotoBelow)(
    'ttl update --expiry-index, index describe, backfill --dry-run, backfill, ACTIVE',
    async () => {
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
    },
  );

  caseOn(server, { dynalite: 'dynalite refuses UpdateTable GlobalSecondaryIndexUpdates' })(
    'index create adds the index to a table (UpdateTable), backfill makes it ACTIVE, index drop removes it',
    async () => {
      const t = await createTestTable(ddb, uniqueName('cli-idx-new'));
      tables.push(t);
      for (let i = 0; i < 20; i++)
        await ddb.send(
          new PutItemCommand({ TableName: t, Item: { pk: { S: `i${i}` }, exp: { N: '2000000000' } } }),
        );
      // In this process (test/support/cli.ts): the same program, without a process start per command.
      const run = async (...args: string[]): Promise<string> => {
        const r = await cli(args, { ...process.env, ...env, TTLSTREAM_LOG_LEVEL: 'warn' });
        expect(r.stderr).not.toMatch(/ttlstream: /);
        expect(r.code).toBe(0);
        return r.stdout;
      };
      const status = async (): Promise<unknown> =>
        (JSON.parse(await run('index', 'describe', '--table', t, '--json')) as { status: unknown }).status;
      await run('ttl', 'update', '--table', t, '--enable', '--attribute', 'exp', '--expiry-index=4');
      expect(await status()).toBe('NONE');
      await run('index', 'create', '--table', t);
      // moto builds a GSI at once; the items already there are not in it until the backfill stamps them.
      expect(await status()).toBe('BACKFILLING');
      expect(await run('index', 'backfill', '--table', t, '--segments', '2')).toMatch(/stamped\s+20/);
      expect(await status()).toBe('ACTIVE');
      expect(await run('index', 'drop', '--table', t)).toMatch(/DELETING/);
      expect(await status()).toBe('NONE');
    },
  );

  caseOn(server, onMotoBelow)(
    'index create refuses a table whose TTL settings have no expiry index, naming the fix',
    async () => {
      const t = await createTestTable(ddb, uniqueName('cli-idx-no'));
      tables.push(t);
      expect(
        (await runCli(['ttl', 'update', '--table', t, '--enable', '--attribute', 'exp'], env)).code,
      ).toBe(0);
      const r = await runCli(['index', 'create', '--table', t], env);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/--expiry-index/);
    },
  );
});
