import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { silentLogger } from '../../../core/logger';
import { describeExpiryIndex } from '../../../control/expiry-index';
import { EXPIRY_SHARD_ATTRIBUTE, expiryShardOf, type TableTtlSettings } from '../../../policy';
import { backfillExpiryIndex, planStamp, type BackfillOptions } from '../../../scanner/backfill';
import { createTableWithExpiryIndex } from '../../support/expiry-index';
import { DYNAMO_SERVERS, onServer } from '../../support/dynamodb-servers';
import { uniqueName } from '../../support/stack';
import {
  createEnv,
  pipelineConfig,
  putItems,
  scanAll,
  type Env,
  type Item,
} from '../../support/pipeline-harness';

/**
 * `index backfill` against each DynamoDB-API server (the table is created with the index, see 0011): dry run
 * writes nothing, a backfill stopped half-way is resumed by another process from its checkpoints, every update is
 * conditional, and the index status goes BACKFILLING → ACTIVE.
 */
describe.each(DYNAMO_SERVERS)('expiry index backfill (%s)', (server) => {
  const settings: TableTtlSettings = {
    policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
    expiryIndex: { shards: 4 },
  };
  let env: Env;
  let table: string;
  const options = (over: Partial<BackfillOptions> = {}): BackfillOptions => ({
    ddb: env.ddb,
    controlTable: env.config.tables.control,
    table,
    settings,
    segments: 2,
    ratePerSec: 100_000,
    dryRun: false,
    // Long enough that a renewal is never late on a loaded 2-core runner: a lease lapsing mid-segment restarts the
    // segment from its checkpoint, which read 99 items more than the table in a 3-lane run with leases of 1 s.
    leaseMs: 5000,
    logger: silentLogger,
    pageSize: 25,
    ...over,
  });

  beforeAll(async () => {
    env = await createEnv(pipelineConfig(onServer(server)));
    table = await createTableWithExpiryIndex(env.ddb, uniqueName('idx-backfill'), settings);
    env.tables.push(table);
    await env.store.update(table, { enabled: true, settings }, 'test');
    const items: Item[] = [];
    for (let i = 0; i < 250; i++)
      items.push({ pk: { S: `ttl-${i}` }, expiresAt: { N: String(2_000_000_000 + i) } });
    for (let i = 0; i < 50; i++) items.push({ pk: { S: `none-${i}` }, v: { S: 'x' } });
    await putItems(env.ddb, table, items);
  });
  afterAll(() => env.cleanup());

  it('dry run counts what it would stamp and writes nothing', async () => {
    expect((await describeExpiryIndex(env.ddb, env.config.tables.control, table)).status).toBe('BACKFILLING');
    const p = await backfillExpiryIndex(options({ dryRun: true }));
    expect(p).toMatchObject({ scanned: 300, stamped: 250, skipped: 50, alreadyStamped: 0, segmentsDone: 2 });
    const all = await scanAll(env.ddb, table);
    expect([...all.values()].filter((i) => i[EXPIRY_SHARD_ATTRIBUTE] !== undefined)).toHaveLength(0);
  });

  it('is resumed from its checkpoints after a stop half-way, stamping each item with its shard, then ACTIVE', async () => {
    const stop = new AbortController();
    const first = await backfillExpiryIndex(
      options({
        ownerId: 'first',
        ratePerSec: 400,
        signal: stop.signal,
        onProgress: (p) => {
          if (p.scanned >= 100) stop.abort();
        },
      }),
    );
    expect(first.scanned).toBeGreaterThanOrEqual(100);
    expect(first.scanned).toBeLessThan(300);
    expect((await describeExpiryIndex(env.ddb, env.config.tables.control, table)).status).toBe('BACKFILLING');

    const second = await backfillExpiryIndex(options({ ownerId: 'second' }));
    // Resumed, not restarted: together they read the table about once (a page in flight may be read twice).
    expect(second.scanned).toBeLessThan(300);
    expect(first.scanned + second.scanned).toBeLessThanOrEqual(300 + 2 * 25);
    expect(first.stamped + second.stamped).toBe(250);
    const all = await scanAll(env.ddb, table);
    for (const [pk, item] of all) {
      if (pk.startsWith('ttl-'))
        expect(item[EXPIRY_SHARD_ATTRIBUTE]).toEqual({ N: String(expiryShardOf({ pk: { S: pk } }, 4)) });
      else expect(item[EXPIRY_SHARD_ATTRIBUTE]).toBeUndefined();
    }
    const d = await describeExpiryIndex(env.ddb, env.config.tables.control, table);
    expect(d.status).toBe('ACTIVE');
  });

  it('never re-creates an item deleted after it was read, nor overwrites a stamped write', async () => {
    const item: Item = { pk: { S: 'raced' }, expiresAt: { N: '2000000000' } };
    await putItems(env.ddb, table, [item]);
    const plan = planStamp(settings, ['pk'], item);
    if (typeof plan !== 'object') throw new Error('expected an update');
    await env.ddb.send(new DeleteItemCommand({ TableName: table, Key: { pk: { S: 'raced' } } }));
    await expect(env.ddb.send(new UpdateItemCommand({ TableName: table, ...plan }))).rejects.toBeInstanceOf(
      ConditionalCheckFailedException,
    );
    const { Item } = await env.ddb.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: 'raced' } }, ConsistentRead: true }),
    );
    expect(Item).toBeUndefined();
    await putItems(env.ddb, table, [{ ...item, [EXPIRY_SHARD_ATTRIBUTE]: { N: '3' } }]);
    await expect(env.ddb.send(new UpdateItemCommand({ TableName: table, ...plan }))).rejects.toBeInstanceOf(
      ConditionalCheckFailedException,
    );
  });
});
