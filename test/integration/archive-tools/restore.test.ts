import { GetItemCommand, PutItemCommand, ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { restore, type TtlSettingsLookup } from '../../../archive-tools/restore';
import { openCatalog } from '../../../archive/catalog';
import type { ArchiveStorage } from '../../../archive/storage';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { NotFoundError, ValidationError } from '../../../core/errors';
import type { Item, TableTtlSettings } from '../../../policy';
import type { ArchivedRecord } from '../../../schemas';
import { TtlSettingsStore } from '../../../control';
import { serverConfig, type DynamoServer } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { startRealArchive, type RealArchive } from '../../support/real-archive';
import { removeRow, retractRow } from '../../support/archive-fixture';

const kafka = createKafka(testConfig());

const H = 3_600_000;
const NOW = Date.now();
const T1 = Math.floor((NOW - 30 * H) / 1000); // first deletions, 30 h ago
const T2 = Math.floor((NOW - 10 * H) / 1000); // later deletions
const T3 = Math.floor((NOW - 5 * H) / 1000);

function image(version: number, extra: Item = {}): Item {
  return {
    expiresAt: { N: String(T1 - 60) },
    version: { N: String(version) },
    blob: { B: new Uint8Array([version, 0, 255, 7]) },
    doc: { M: { tags: { SS: ['a', 'b'] }, list: { L: [{ S: 'x' }, { NULL: true }, { BOOL: false }] } } },
    nums: { NS: ['1', '2.5'] },
    ...extra,
  };
}

interface Fixture {
  table: string;
  rows: Record<string, ArchivedRecord>;
}

/** The archived history of one source table: two deletions of user#1, one retracted deletion, ... */
function history(table: string): Fixture {
  const k = (pk: string): Item => ({ pk: { S: pk } });
  const rows = {
    u1v1: removeRow({ table, keys: k('user#1'), image: image(1), deletedAtS: T1 }),
    u2: removeRow({ table, keys: k('user#2'), image: image(1), deletedAtS: T1 + 5 }),
    u1v2: removeRow({ table, keys: k('user#1'), image: image(2), deletedAtS: T2 }),
    a1: removeRow({ table, keys: k('admin#1'), image: image(1), deletedAtS: T2 + 1 }),
    u3: removeRow({ table, keys: k('user#3'), image: image(1), deletedAtS: T3 }),
  };
  return { table, rows: { ...rows, u3x: retractRow(rows.u3, T3 * 1000 + 2000) } };
}

async function getItem(ddb: DynamoDBClient, table: string, pk: string): Promise<Item | undefined> {
  const out = await ddb.send(
    new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }),
  );
  return out.Item;
}

async function countItems(ddb: DynamoDBClient, table: string): Promise<number> {
  const out = await ddb.send(new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }));
  return out.Count ?? 0;
}

function oldImage(row: ArchivedRecord | undefined): Item {
  if (!row?.record) throw new Error('not a REMOVE row');
  return row.record.dynamodb.OldImage;
}

function without(item: Item, ...names: string[]): Item {
  const out = { ...item };
  for (const n of names) delete out[n];
  return out;
}

const dynamoSettings: TtlSettingsLookup = {
  describe: async () => ({ settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } } }),
};

// Restore reads both data-file formats the same way (archive/format/): the Parquet variant proves the same items
// come back byte for byte from a Parquet archive (B, SS, NS, L, M, NULL, BOOL above). Restore writes through
// either DynamoDB-API server the same way: the moto variant proves it on a second implementation.
describe.each([
  ['fs', 'avro', 'dynalite'],
  ['s3', 'avro', 'dynalite'],
  ['fs', 'parquet', 'dynalite'],
  ['fs', 'avro', 'moto'],
] as Array<['fs' | 's3', 'avro' | 'parquet', DynamoServer]>)(
  'restore from a %s archive of %s files into %s',
  (kind, format, server) => {
    const config = serverConfig(server);
    const ddb: DynamoDBClient = createDynamoClient(config);
    let archive: RealArchive;
    let storage: ArchiveStorage;
    let fx: Fixture;
    const created: string[] = [];
    const table = async (): Promise<string> => {
      const name = await createTestTable(ddb, uniqueName('restore'));
      created.push(name);
      return name;
    };

    beforeAll(async () => {
      archive = await startRealArchive(kafka, kind, format);
      storage = archive.storage;
      fx = history(await table());
      const r = fx.rows;
      // Through Kafka and the real archiver: the REMOVEs, then the retraction of user#3.
      await archive.archive([r.u1v1!, r.u2!, r.u1v2!, r.a1!, r.u3!]);
      await archive.archive([r.u3x!], 'json');
    });

    afterAll(async () => {
      for (const name of created) await deleteTestTable(ddb, name);
      ddb.destroy();
      await archive.close();
    });

    it('restores one key into the original table: its latest deletion, TTL removed; a second run changes nothing', async () => {
      const first = await restore(
        { storage, ddb, settingsStore: dynamoSettings },
        { table: fx.table, key: { pk: { S: 'user#1' } } },
      );
      expect(first).toMatchObject({ restored: 1, skippedPresent: 0, skippedRetracted: 0, failed: [] });
      expect(await getItem(ddb, fx.table, 'user#1')).toEqual(without(oldImage(fx.rows.u1v2), 'expiresAt'));

      const second = await restore(
        { storage, ddb, settingsStore: dynamoSettings },
        { table: fx.table, key: '{"pk":{"S":"user#1"}}' },
      );
      expect(second).toMatchObject({ restored: 0, skippedPresent: 1, failed: [] });
      expect(await countItems(ddb, fx.table)).toBe(1);
    });

    it('never overwrites an item that exists now, unless overwrite', async () => {
      const target = await table();
      const newer = { pk: { S: 'user#2' }, note: { S: 'written after the deletion' } };
      await ddb.send(new PutItemCommand({ TableName: target, Item: newer }));
      const options = {
        table: fx.table,
        targetTable: target,
        key: { pk: { S: 'user#2' } },
        ttl: 'keep' as const,
      };
      expect(await restore({ storage, ddb }, options)).toMatchObject({ restored: 0, skippedPresent: 1 });
      expect(await getItem(ddb, target, 'user#2')).toEqual(newer);
      expect(await restore({ storage, ddb }, { ...options, overwrite: true })).toMatchObject({
        restored: 1,
        skippedPresent: 0,
      });
      expect(await getItem(ddb, target, 'user#2')).toEqual(oldImage(fx.rows.u2));
    });

    it('restores by hash-key prefix into another table and leaves retracted deletions out', async () => {
      const target = await table();
      const progress: Array<[number, number]> = [];
      const result = await restore(
        { storage, ddb, settingsStore: dynamoSettings },
        {
          table: fx.table,
          targetTable: target,
          keyPrefix: 'user#',
          onProgress: (d, t) => progress.push([d, t]),
        },
      );
      expect(result).toMatchObject({ restored: 2, skippedPresent: 0, skippedRetracted: 1, failed: [] });
      expect(await getItem(ddb, target, 'user#1')).toEqual(without(oldImage(fx.rows.u1v2), 'expiresAt'));
      expect(await getItem(ddb, target, 'user#2')).toEqual(without(oldImage(fx.rows.u2), 'expiresAt'));
      expect(await getItem(ddb, target, 'user#3')).toBeUndefined();
      expect(await countItems(ddb, target)).toBe(2);
      expect(progress.at(-1)).toEqual([3, 3]);
    });

    it('a time window narrows the versions: the deletion inside it is restored, not the latest', async () => {
      const target = await table();
      const result = await restore(
        { storage, ddb, settingsStore: dynamoSettings },
        { table: fx.table, targetTable: target, fromMs: T1 * 1000, toMs: (T1 + 6) * 1000, ttl: 'keep' },
      );
      expect(result).toMatchObject({ restored: 2, skippedRetracted: 0, failed: [] });
      expect(await getItem(ddb, target, 'user#1')).toEqual(oldImage(fx.rows.u1v1));
      expect(await getItem(ddb, target, 'user#2')).toEqual(oldImage(fx.rows.u2));
      // ttl keep: restored exactly as deleted, and counted as expiring again (their expiresAt is past)
      expect(result.expiresAgain).toBe(2);
    });

    it('restores a whole table; the counts add up to the keys archived', async () => {
      const target = await table();
      const result = await restore(
        { storage, ddb },
        { table: fx.table, targetTable: target, ttl: { extendSeconds: 3600 }, ttlAttribute: 'expiresAt' },
      );
      expect(result).toMatchObject({ restored: 3, skippedPresent: 0, skippedRetracted: 1, failed: [] });
      const admin = await getItem(ddb, target, 'admin#1');
      const expires = Number(admin?.expiresAt?.N);
      expect(expires).toBeGreaterThanOrEqual(Math.floor(NOW / 1000) + 3600);
      expect(expires).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
      expect(without(admin ?? {}, 'expiresAt')).toEqual(without(oldImage(fx.rows.a1), 'expiresAt'));
    });

    it('dry run reports what it would write and writes nothing', async () => {
      const target = await table();
      await ddb.send(new PutItemCommand({ TableName: target, Item: { pk: { S: 'admin#1' } } }));
      const result = await restore(
        { storage, ddb, settingsStore: dynamoSettings },
        { table: fx.table, targetTable: target, dryRun: true },
      );
      expect(result).toMatchObject({ restored: 0, skippedPresent: 1, skippedRetracted: 1, failed: [] });
      expect(result.wouldWrite?.map((w) => w.key).sort()).toEqual([
        '{"pk":{"S":"user#1"}}',
        '{"pk":{"S":"user#2"}}',
      ]);
      expect(result.wouldWrite?.find((w) => w.key.includes('user#1'))?.item).toEqual(
        without(oldImage(fx.rows.u1v2), 'expiresAt'),
      );
      expect(await countItems(ddb, target)).toBe(1);
    });

    it('cosmos mode pins the restored item with ttl -1', async () => {
      const target = await table();
      const cosmos: TableTtlSettings = {
        policy: { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
      };
      const lookup: TtlSettingsLookup = {
        describe: async (t) => {
          if (t !== target) throw new NotFoundError(`no settings for ${t}`);
          return { settings: cosmos };
        },
      };
      const result = await restore(
        { storage, ddb, settingsStore: lookup },
        { table: fx.table, targetTable: target, key: { pk: { S: 'user#2' } } },
      );
      expect(result.restored).toBe(1);
      expect(await getItem(ddb, target, 'user#2')).toEqual({ ...oldImage(fx.rows.u2), ttl: { N: '-1' } });
    });

    it('reads the TTL mode from the real settings store: mongo extend sets the time field', async () => {
      const target = await table();
      const controlTable = uniqueName('restore-ctl');
      created.push(controlTable);
      const store = new TtlSettingsStore(ddb, { controlTable, propagationMs: 0 });
      await store.update(
        target,
        {
          enabled: true,
          settings: {
            policy: {
              mode: 'mongo',
              expireAfterSeconds: 600,
              timeField: 'createdAt',
              timeFormat: 'iso-8601',
            },
          },
        },
        'restore-test',
      );
      const before = Math.floor(Date.now() / 1000);
      const result = await restore(
        { storage, ddb, settingsStore: store },
        { table: fx.table, targetTable: target, key: { pk: { S: 'admin#1' } }, ttl: { extendSeconds: 7200 } },
      );
      expect(result).toMatchObject({ restored: 1, failed: [] });
      const item = await getItem(ddb, target, 'admin#1');
      const at = Date.parse(item?.createdAt?.S ?? '');
      // now + 7200 - 600, to the second
      expect(at).toBeGreaterThanOrEqual((before + 7200 - 600) * 1000);
      expect(at).toBeLessThanOrEqual((Math.floor(Date.now() / 1000) + 7200 - 600) * 1000);
      expect(without(item ?? {}, 'createdAt')).toEqual(oldImage(fx.rows.a1));
    });

    it('of two deletions in one second, the higher SequenceNumber is the latest, whatever the archive order', async () => {
      const source = await table();
      const [hi, lo] = [900_000_000n, 7n].map((seq, v) =>
        removeRow({
          table: source,
          keys: { pk: { S: 'twin' } },
          image: { v: { N: String(v) } },
          deletedAtS: T2,
          sequenceNumber: seq,
        }),
      );
      await archive.archive([hi!]);
      await archive.archive([lo!]);
      expect(
        await restore({ storage, ddb }, { table: source, key: { pk: { S: 'twin' } }, ttl: 'keep' }),
      ).toMatchObject({
        restored: 1,
      });
      expect(await getItem(ddb, source, 'twin')).toEqual(oldImage(hi));
    });

    it('a key prefix on a table with a sort key matches the hash key the table declares', async () => {
      const source = await createTestTable(ddb, uniqueName('restore-ck'), { hashKey: 'dev', rangeKey: 'at' });
      created.push(source);
      const k = (dev: string, at: string): Item => ({ dev: { S: dev }, at: { S: at } });
      const rows = [
        removeRow({ table: source, keys: k('dev-1', 'a'), deletedAtS: T2 }),
        removeRow({ table: source, keys: k('dev-1', 'b'), deletedAtS: T2 }),
        removeRow({ table: source, keys: k('hub-1', 'dev-x'), deletedAtS: T2 }),
      ];
      await archive.archive(rows);
      const result = await restore({ storage, ddb }, { table: source, keyPrefix: 'dev-', ttl: 'keep' });
      expect(result).toMatchObject({ restored: 2, failed: [] });
      expect(await countItems(ddb, source)).toBe(2);
    });

    it('a write whose reply was lost and was retried counts as restored, not as present', async () => {
      const target = await table();
      // Fault injection in the client, outside the SDK's retries: the first PutItem reaches the real
      // server, then its reply is "lost" as a 503, so restore retries and meets its own write.
      const flaky = createDynamoClient(config);
      let lost = 0;
      flaky.middlewareStack.add(
        (next, context) => async (args) => {
          const out = await next(args);
          if (context.commandName === 'PutItemCommand' && lost === 0) {
            lost += 1;
            throw Object.assign(new Error('reply lost'), {
              name: 'ServiceUnavailable',
              $metadata: { httpStatusCode: 503 },
            });
          }
          return out;
        },
        { step: 'initialize', name: 'loseFirstPutReply' },
      );
      const result = await restore(
        { storage, ddb: flaky, settingsStore: dynamoSettings },
        { table: fx.table, targetTable: target, key: { pk: { S: 'user#2' } } },
      );
      flaky.destroy();
      expect(lost).toBe(1);
      expect(result).toMatchObject({ restored: 1, skippedPresent: 0, failed: [] });
      expect(await getItem(ddb, target, 'user#2')).toEqual(without(oldImage(fx.rows.u2), 'expiresAt'));
    });

    it('refuses bad input before touching anything', async () => {
      await expect(
        restore({ storage, ddb }, { table: fx.table, targetTable: 'no-such-table-xyz' }),
      ).rejects.toThrow(NotFoundError);
      await expect(restore({ storage, ddb }, { table: fx.table })).rejects.toThrow(/ttlAttribute/);
      await expect(restore({ storage, ddb }, { table: 'x' })).rejects.toThrow(ValidationError);
      await expect(
        restore({ storage, ddb }, { table: fx.table, key: { pk: { S: 'a' } }, keyPrefix: 'a', ttl: 'keep' }),
      ).rejects.toThrow(/key or keyPrefix/);
      await expect(restore({ storage, ddb }, { table: fx.table, ttl: { extendSeconds: 0 } })).rejects.toThrow(
        ValidationError,
      );
    });

    it('a damaged data file fails its items by name and restores the rest', async () => {
      const broken = history(await table());
      await archive.archive([broken.rows.u1v1!, broken.rows.a1!]);
      const target = await table();
      const [victim] = (await openCatalog(storage).findVersions(broken.table, { pk: { S: 'user#1' } })).map(
        (v) => v.file,
      );
      const body = (await storage.get(victim as string)) as Buffer;
      await storage.put(victim as string, body.subarray(0, body.length - 5));
      const result = await restore(
        { storage, ddb },
        { table: broken.table, targetTable: target, ttl: 'keep' },
      );
      expect(result.restored).toBe(1);
      expect(result.failed).toEqual([
        { key: '{"pk":{"S":"user#1"}}', reason: expect.stringMatching(/truncated/) },
      ]);
      expect(await getItem(ddb, target, 'admin#1')).toEqual(oldImage(broken.rows.a1));
    });
  },
);
