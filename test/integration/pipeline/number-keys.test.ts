import { CreateTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { restore } from '../../../archive-tools/restore';
import { createKafka } from '../../../core/clients';
import { waitForActive } from '../../../core/tables';
import { messageKey } from '../../../schemas';
import { DYNAMO_SERVERS, onServer } from '../../support/dynamodb-servers';
import {
  Collector,
  createEnv,
  pipelineConfig,
  putItems,
  startInProcess,
  type Env,
  type Item,
} from '../../support/pipeline-harness';
import { countRows, startRealArchive, type RealArchive } from '../../support/real-archive';
import { scanTable, testConfig, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';

/**
 * An item is named by its key attributes as the server returned them, never re-spelled: its number sort key was
 * written `1e3`. moto's server keeps numbers as written (and re-spells them `1E+3` under the scanner's projection);
 * dynalite, like DynamoDB, returns `1000`. On both, the item is deleted, its REMOVE record carries the key and the
 * image as the server keeps them, the record is archived, and restore puts the item back and then finds it present.
 */
const kafka = createKafka(testConfig());
// One archive (a real archiver on a topic of its own) for both servers' pipelines.
let archive: RealArchive;
beforeAll(async () => {
  archive = await startRealArchive(kafka, 'fs');
});
afterAll(() => archive.close());

describe.each(DYNAMO_SERVERS)('an item with a number key written 1e3 (%s)', (server) => {
  let env: Env;
  let collector: Collector;
  let table: string;

  beforeAll(async () => {
    // The pipeline publishes to the topic the archive's archiver consumes.
    env = await createEnv(pipelineConfig(onServer(server, { topics: { shared: archive.topic } })));
    collector = new Collector(env.kafka);
    await collector.start(archive.topic);
    table = uniqueName('num-key');
    env.tables.push(table);
    await env.ddb.send(
      new CreateTableCommand({
        TableName: table,
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'N' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await waitForActive(env.ddb, table);
    await env.store.update(
      table,
      { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: 'exp' } } },
      'test',
    );
  });
  afterAll(async () => {
    await collector.stop();
    await env.cleanup();
  });

  const get = async (key: Item): Promise<Item | undefined> =>
    (await env.ddb.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;

  it('is deleted with its REMOVE record published and archived, and restored as it was', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    await putItems(env.ddb, table, [
      { pk: { S: 'order#1' }, sk: { N: '1e3' }, exp: { N: String(nowS - 60) }, note: { S: 'expired' } },
      { pk: { S: 'order#1' }, sk: { N: '2e3' }, exp: { N: String(nowS + 3600) }, note: { S: 'alive' } },
    ]);
    // The item as the server keeps it: `1e3` on moto, `1000` on dynalite.
    const stored = await get({ pk: { S: 'order#1' }, sk: { N: '1000' } });
    if (!stored) throw new Error('the item written 1e3 is not there');
    const storedKey = { pk: stored.pk, sk: stored.sk } as Item;
    expect(stored.sk).toEqual({ N: server === 'moto' ? '1e3' : '1000' });

    const pipeline = await startInProcess(env, ['scanner', 'producer']);
    try {
      await waitFor(
        'the expired item to be deleted',
        async () => (await get(storedKey)) === undefined,
        30_000,
      );
    } finally {
      await pipeline.stop();
    }
    expect((await scanTable(env.ddb, table)).map((i) => i.note?.S)).toEqual(['alive']);

    await waitFor('its REMOVE record', async () => collector.removes.length >= 1, 15_000);
    const records = collector.effectiveByKey().get(messageKey(table, storedKey)) ?? [];
    expect(records).toHaveLength(1);
    expect(records[0]?.dynamodb.Keys).toEqual(storedKey);
    expect(records[0]?.dynamodb.OldImage).toEqual(stored);
    await waitFor('the record archived', async () => (await countRows(archive.storage, table)) >= 1, 30_000);

    // Restore finds the archived deletion by the key in any spelling, writes the image as it was deleted (TTL
    // removed, the default), and a second run finds it present by the key as stored.
    const deps = { storage: archive.storage, ddb: env.ddb, settingsStore: env.store };
    const first = await restore(deps, { table, key: { pk: { S: 'order#1' }, sk: { N: '1E+3' } } });
    expect(first).toMatchObject({ restored: 1, skippedPresent: 0, failed: [] });
    const { exp: _removed, ...restored } = stored;
    expect(await get(storedKey)).toEqual(restored);
    const second = await restore(deps, { table, key: { pk: { S: 'order#1' }, sk: { N: '1000' } } });
    expect(second).toMatchObject({ restored: 0, skippedPresent: 1, failed: [] });
    const dryRun = await restore(deps, {
      table,
      key: { pk: { S: 'order#1' }, sk: { N: stored.sk?.N ?? '' } },
      dryRun: true,
    });
    expect(dryRun).toMatchObject({ restored: 0, skippedPresent: 1 });
  }, 90_000);
});
