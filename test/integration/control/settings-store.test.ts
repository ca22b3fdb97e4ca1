import {
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceNotFoundException,
  ScanCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDynamoClient } from '../../../core/clients';
import { INTERNAL_SORT_KEY, ensureInternalTable } from '../../../core/tables';
import { ConflictError, NotFoundError, ValidationError } from '../../../core/errors';
import { TtlSettingsStore } from '../../../control/settings-store';
import { MODIFIED_MULTIPLE_TIMES } from '../../../control/ttl-state';
import type { TableTtlSettings } from '../../../policy/settings';
import { createTestTable, deleteTestTable, newTable, testConfig, uniqueName } from '../../support/stack';
import { waitUntil } from './control-plane.support';
import { dynamodbTtl, mongoTtl } from '../../support/ttl-settings';

// Long enough that no request of a loaded CI machine outlasts it between an update and the check of its status.
const PROP = 2000;

async function waitForDeleted(ddb: DynamoDBClient, table: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      await ddb.send(new DescribeTableCommand({ TableName: table }));
    } catch (err) {
      if (err instanceof ResourceNotFoundException) return;
      throw err;
    }
    await sleep(50);
  }
  throw new Error(`table ${table} was not deleted within 15 s`);
}

describe('TtlSettingsStore against the DynamoDB API', () => {
  const config = testConfig();
  let ddb: DynamoDBClient;
  let controlTable: string;
  let store: TtlSettingsStore;
  const tables: string[] = [];

  beforeAll(() => {
    ddb = createDynamoClient(config);
    controlTable = uniqueName('ctl');
    store = new TtlSettingsStore(ddb, { controlTable, propagationMs: PROP });
  });

  afterAll(async () => {
    for (const t of [...tables, controlTable]) await deleteTestTable(ddb, t);
    ddb.destroy();
  });

  it('describes a table without TTL as DISABLED and an unknown table as not found', async () => {
    const table = await newTable(ddb, 'ttl', tables);
    expect(await store.describe(table)).toEqual({
      table,
      status: 'DISABLED',
      settings: null,
      changedAt: 0,
      changedBy: '',
      statusSettlesAt: 0,
    });
    await expect(store.describe(uniqueName('missing'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      store.update(uniqueName('missing'), { enabled: true, settings: dynamodbTtl('exp') }, 't'),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it('goes ENABLING → ENABLED → DISABLING → DISABLED, refusing changes while settling', async () => {
    const table = await newTable(ddb, 'ttl', tables);
    const enabling = await store.update(table, { enabled: true, settings: dynamodbTtl('exp') }, 'tester');
    expect(enabling).toMatchObject({ status: 'ENABLING', settings: dynamodbTtl('exp'), changedBy: 'tester' });
    expect(enabling.statusSettlesAt).toBe(enabling.changedAt + PROP);
    expect((await store.describe(table)).status).toBe('ENABLING');
    await expect(store.update(table, { enabled: false }, 'tester')).rejects.toThrow(
      new ConflictError(MODIFIED_MULTIPLE_TIMES),
    );
    expect(await store.enabledTables()).not.toContainEqual(expect.objectContaining({ table }));

    await waitUntil(enabling.statusSettlesAt);
    expect((await store.describe(table)).status).toBe('ENABLED');
    expect(await store.enabledTables()).toContainEqual({ table, settings: dynamodbTtl('exp') });
    await expect(
      store.update(table, { enabled: true, settings: dynamodbTtl('other') }, 'tester'),
    ).rejects.toThrow('TimeToLive is active on a different AttributeName: current AttributeName is exp');
    const again = await store.update(table, { enabled: true, settings: dynamodbTtl('exp') }, 'someone-else');
    expect(again).toMatchObject({ status: 'ENABLED', changedAt: enabling.changedAt, changedBy: 'tester' });

    const disabling = await store.update(table, { enabled: false }, 'tester');
    expect(disabling).toMatchObject({ status: 'DISABLING', settings: dynamodbTtl('exp') });
    expect(await store.enabledTables()).not.toContainEqual(expect.objectContaining({ table }));
    await waitUntil(disabling.statusSettlesAt);
    expect(await store.describe(table)).toMatchObject({ status: 'DISABLED', settings: null });
  });

  it('changes mongo expireAfterSeconds in place (collMod), through modifyMongo and through update', async () => {
    const table = await newTable(ddb, 'ttl', tables);
    const first = await store.update(table, { enabled: true, settings: mongoTtl(60) }, 'a');
    // Allowed while ENABLING, and it does not extend the settling time.
    const during = await store.modifyMongo(table, 120, 'b');
    expect(during).toMatchObject({ status: 'ENABLING', statusSettlesAt: first.statusSettlesAt });
    await waitUntil(first.statusSettlesAt);
    const off = await store.modifyMongo(table, 'off', 'c');
    expect(off).toMatchObject({ status: 'ENABLED', settings: mongoTtl('off'), changedBy: 'c' });
    const viaUpdate = await store.update(table, { enabled: true, settings: mongoTtl(30) }, 'd');
    expect(viaUpdate).toMatchObject({ status: 'ENABLED', settings: mongoTtl(30) });
    expect(await store.enabledTables()).toContainEqual({ table, settings: mongoTtl(30) });
    await expect(store.modifyMongo(table, -1, 'e')).rejects.toBeInstanceOf(ValidationError);
  });

  it('serializes concurrent writers from several processes: exactly one enable wins', async () => {
    const table = await newTable(ddb, 'ttl', tables);
    // Separate clients and stores, as separate ttlstream processes would have.
    const clients = Array.from({ length: 6 }, () => createDynamoClient(config));
    try {
      const stores = clients.map((c) => new TtlSettingsStore(c, { controlTable, propagationMs: 60_000 }));
      const results = await Promise.allSettled(
        stores.map((s, i) => s.update(table, { enabled: true, settings: dynamodbTtl(`attr${i}`) }, `p${i}`)),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      for (const r of lost) expect(r.reason).toEqual(new ConflictError(MODIFIED_MULTIPLE_TIMES));
      const winner = (
        won[0] as PromiseFulfilledResult<{ changedBy: string; settings: TableTtlSettings | null }>
      ).value;
      const described = await store.describe(table);
      expect(described.changedBy).toBe(winner.changedBy);
      expect(described.settings).toEqual(winner.settings);
      // The row's version counts exactly one write.
      const { Items } = await ddb.send(new ScanCommand({ TableName: controlTable, ConsistentRead: true }));
      const row = Items?.find((i) => i.pk?.S === `settings#${table}`);
      expect(row?.version?.N).toBe('1');
    } finally {
      for (const c of clients) c.destroy();
    }
  });

  it('lists every table with its status, hiding its own tables', async () => {
    const a = await newTable(ddb, 'ttl', tables);
    const b = await newTable(ddb, 'ttl', tables);
    // A settling time no test run reaches: the status of `a` must still be ENABLING when listed.
    const settling = new TtlSettingsStore(ddb, { controlTable, propagationMs: 60_000 });
    await settling.update(a, { enabled: true, settings: dynamodbTtl('exp') }, 'x');
    const list = await settling.list();
    const names = list.map((d) => d.table);
    expect(names).toEqual(expect.arrayContaining([a, b]));
    expect(names).not.toContain(controlTable);
    expect(list.find((d) => d.table === a)?.status).toBe('ENABLING');
    expect(list.find((d) => d.table === b)?.status).toBe('DISABLED');
    await expect(
      store.update(controlTable, { enabled: true, settings: dynamodbTtl('exp') }, 'x'),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it("refuses TTL on any ttlstream table, another deployment's too, and allows a user table keyed the same way", async () => {
    const otherControl = uniqueName('other-ctl');
    const otherMarks = uniqueName('other-marks');
    tables.push(otherControl, otherMarks);
    await ensureInternalTable(ddb, otherControl);
    await ensureInternalTable(ddb, otherMarks, { sortKey: INTERNAL_SORT_KEY });
    for (const t of [otherControl, otherMarks]) {
      await expect(
        store.update(t, { enabled: true, settings: dynamodbTtl('expiresAt') }, 'x'),
      ).rejects.toThrow(
        new ValidationError(
          `table ${t} holds ttlstream control data or marks (of this or another deployment); its TTL cannot be set`,
        ),
      );
    }
    const user = await createTestTable(ddb, uniqueName('user'), { hashKey: 'pk', rangeKey: 'sk' });
    tables.push(user);
    expect((await store.update(user, { enabled: true, settings: dynamodbTtl('exp') }, 'x')).status).toBe(
      'ENABLING',
    );
    // GET /tables does not show them either.
    const listed = (await store.list()).map((d) => d.table);
    expect(listed).toContain(user);
    expect(listed).not.toContain(otherControl);
    expect(listed).not.toContain(otherMarks);
  });

  it('does not carry TTL over to a table re-created under the same name', async () => {
    const table = await newTable(ddb, 'ttl', tables);
    const on = await store.update(table, { enabled: true, settings: dynamodbTtl('exp') }, 'x');
    await waitUntil(on.statusSettlesAt);
    expect(await store.enabledTables()).toContainEqual({ table, settings: dynamodbTtl('exp') });

    await ddb.send(new DeleteTableCommand({ TableName: table }));
    // Deleted: gone from the enabled list even though its row remains.
    expect(await store.enabledTables()).not.toContainEqual(expect.objectContaining({ table }));
    await expect(store.describe(table)).rejects.toBeInstanceOf(NotFoundError);
    await waitForDeleted(ddb, table);
    await sleep(5); // a different creation instant
    await createTestTable(ddb, table);
    expect(await store.describe(table)).toMatchObject({ status: 'DISABLED', settings: null });
    expect(await store.enabledTables()).not.toContainEqual(expect.objectContaining({ table }));
    // And it can be enabled afresh.
    expect((await store.update(table, { enabled: true, settings: dynamodbTtl('other') }, 'y')).status).toBe(
      'ENABLING',
    );
  });
});
