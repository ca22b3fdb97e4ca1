import { BatchWriteItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { TtlstreamClient } from '../../../client';
import { previewExpiring } from '../../../control/preview';
import type { TableTtlSettings } from '../../../policy/settings';
import { createTestTable, deleteTestTable, uniqueName } from '../../support/stack';
import { TOKEN, http, startControlPlane, type ControlPlane } from './control-plane.support';

type Item = Record<string, AttributeValue>;
const read = { headers: { authorization: `Bearer ${TOKEN}` } };
const N = (n: number): AttributeValue => ({ N: String(n) });
const YEAR_S = 365 * 86_400;

describe('GET /tables/:table/expiring (read-only preview with the policy engine)', () => {
  let cp: ControlPlane;
  const tables: string[] = [];
  const seed = async (table: string, items: Item[]) => {
    for (const Item of items) await cp.ddb.send(new PutItemCommand({ TableName: table, Item }));
  };
  const enable = async (table: string, settings: TableTtlSettings) => {
    const res = await http(cp.base, 'PUT', `/tables/${table}/ttl`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      body: { enabled: true, settings },
    });
    expect(res.status).toBe(200);
  };

  beforeAll(async () => {
    cp = await startControlPlane();
  });
  afterAll(async () => {
    for (const t of [...tables, cp.config.tables.control]) await deleteTestTable(cp.ddb, t);
    await cp.close();
  });

  describe('dynamodb mode with a legal hold', () => {
    let table: string;
    const settings: TableTtlSettings = {
      policy: { mode: 'dynamodb', attributeName: 'exp' },
      legalHoldAttribute: 'hold',
    };
    const key = (pk: string): Item => ({ pk: { S: pk }, sk: { S: 'v1' } });
    const expectedSample = ['e1', 'e2', 'e3', 'h3', 'w1', 'w2'];

    beforeAll(async () => {
      table = await createTestTable(cp.ddb, uniqueName('prev'), { hashKey: 'pk', rangeKey: 'sk' });
      tables.push(table);
      const now = Math.floor(Date.now() / 1000);
      await seed(table, [
        { ...key('e1'), exp: N(now - 100) },
        { ...key('e2'), exp: N(now - 100) },
        { ...key('e3'), exp: N(now - 3600), payload: { S: 'x'.repeat(100) } },
        { ...key('w1'), exp: N(now + 600) },
        { ...key('w2'), exp: N(now + 1800) },
        { ...key('f1'), exp: N(now + 2 * 86_400) },
        { ...key('s1'), exp: { S: String(now - 100) } },
        { ...key('s2'), exp: { M: { v: N(now - 100) } } },
        { ...key('o1'), exp: N(now - 6 * YEAR_S) },
        { ...key('m1'), exp: N(now * 1000) },
        { ...key('h1'), exp: N(now - 100), hold: { BOOL: true } },
        { ...key('h2'), exp: N(now + 100), hold: { BOOL: true } },
        { ...key('h3'), exp: N(now - 100), hold: { BOOL: false } },
        { ...key('n1') },
        { ...key('n2'), other: N(now - 100) },
      ]);
      await enable(table, settings);
    });

    it('counts every kind of item exactly', async () => {
      const res = await http(cp.base, 'GET', `/tables/${table}/expiring?within=3600`, read);
      expect(res.status).toBe(200);
      const body = res.json() as Record<string, unknown> & { sampleKeys: Item[] };
      expect(body).toMatchObject({
        table,
        withinSeconds: 3600,
        scanned: 15,
        expiredNow: 4,
        expiringWithin: 2,
        ignored: { 'wrong-type': 2, 'older-than-5-years': 1, malformed: 0, 'item-ttl-null': 0 },
        looksLikeMillis: 1,
        held: 2,
        // n1 and n2: no exp attribute at all, so never deleted; counted, not silently left out.
        withoutTtlAttribute: 2,
        truncated: false,
      });
      expect(body.sampleKeys.map((k) => k.pk?.S).sort()).toEqual(expectedSample);
      // Keys only, in DynamoDB JSON, with both key attributes.
      for (const k of body.sampleKeys) expect(Object.keys(k).sort()).toEqual(['pk', 'sk']);
    });

    it('narrows expiringWithin with the window', async () => {
      const body = (await http(cp.base, 'GET', `/tables/${table}/expiring?within=900`, read)).json();
      expect(body).toMatchObject({ expiredNow: 4, expiringWithin: 1 });
      const zero = (await http(cp.base, 'GET', `/tables/${table}/expiring?within=0`, read)).json();
      expect(zero).toMatchObject({ expiredNow: 4, expiringWithin: 0 });
    });

    it('stops at limit and says so', async () => {
      const body = (await http(cp.base, 'GET', `/tables/${table}/expiring?limit=5`, read)).json();
      expect(body).toMatchObject({ scanned: 5, truncated: true });
    });

    it('gives the same counts when the scan is paginated in small pages', async () => {
      const full = await previewExpiring(cp.ddb, table, settings, {
        withinSeconds: 3600,
        limit: 1000,
        nowMs: Date.now(),
      });
      const paged = await previewExpiring(cp.ddb, table, settings, {
        withinSeconds: 3600,
        limit: 1000,
        nowMs: full.evaluatedAt,
        pageSize: 2,
      });
      expect(paged).toEqual(full);
      const bounded = await previewExpiring(cp.ddb, table, settings, {
        withinSeconds: 3600,
        limit: 7,
        nowMs: full.evaluatedAt,
        pageSize: 3,
      });
      expect(bounded).toMatchObject({ scanned: 7, truncated: true });
    });
  });

  describe('cosmos mode', () => {
    let table: string;
    beforeAll(async () => {
      table = await createTestTable(cp.ddb, uniqueName('prevc'));
      tables.push(table);
      const now = Math.floor(Date.now() / 1000);
      await seed(table, [
        { pk: { S: 'c1' }, ttl: { NULL: true }, _ts: N(now) },
        { pk: { S: 'c2' }, ttl: N(0), _ts: N(now) },
        { pk: { S: 'c3' }, ttl: N(1.5), _ts: N(now) },
        { pk: { S: 'c4' }, ttl: N(-5), _ts: N(now) },
        { pk: { S: 'c5' }, _ts: N(now - 7200) },
        { pk: { S: 'c6' }, ttl: N(60), _ts: N(now) },
        { pk: { S: 'c7' }, ttl: { S: '60' }, _ts: N(now) },
        { pk: { S: 'c8' }, ttl: N(-1), _ts: N(now - 10 * YEAR_S) },
      ]);
      await enable(table, {
        policy: { mode: 'cosmos', defaultTtl: 3600, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
      });
    });

    it('counts malformed and null item ttls', async () => {
      const body = (await http(cp.base, 'GET', `/tables/${table}/expiring?within=120`, read)).json();
      expect(body).toMatchObject({
        scanned: 8,
        expiredNow: 1,
        expiringWithin: 1,
        ignored: { 'wrong-type': 1, 'older-than-5-years': 0, malformed: 3, 'item-ttl-null': 1 },
        looksLikeMillis: 0,
        held: 0,
        sampleKeys: expect.arrayContaining([{ pk: { S: 'c5' } }, { pk: { S: 'c6' } }]),
      });
    });
  });

  it('with api.openReads, answers an anonymous caller with counts only (no item keys, no changedBy) and scans at most 1000 items', async () => {
    const table = await createTestTable(cp.ddb, uniqueName('open'));
    tables.push(table);
    const now = Math.floor(Date.now() / 1000);
    const items = Array.from({ length: 1200 }, (_, i) => ({
      pk: { S: `user${i}@example.com` },
      exp: N(now - 100),
    }));
    for (let i = 0; i < items.length; i += 25) {
      let batch = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      while (batch.length > 0) {
        const out = await cp.ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: batch } }));
        batch = (out.UnprocessedItems?.[table] ?? []) as typeof batch;
      }
    }
    // Its own control plane (and control table), so changedBy is an access key id as the AWS endpoint writes it.
    const open = await startControlPlane({ api: { openReads: true } });
    try {
      await open.store.update(
        table,
        { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: 'exp' } } },
        'aws:AKIDSECRETOWNER',
      );
      const preview = await http(open.base, 'GET', `/tables/${table}/expiring?limit=100000`);
      expect(preview.status).toBe(200);
      expect(preview.json()).toMatchObject({ scanned: 1000, expiredNow: 1000, truncated: true });
      expect(preview.text).not.toContain('@example.com');
      expect(preview.json()).not.toHaveProperty('sampleKeys');
      const described = await http(open.base, 'GET', `/tables/${table}/ttl`);
      expect(described.status).toBe(200);
      expect(described.json()).toMatchObject({ table, status: 'ENABLING' });
      expect(described.json()).not.toHaveProperty('changedBy');
      const listed = await http(open.base, 'GET', '/tables');
      expect(listed.text).not.toContain('AKIDSECRETOWNER');
      // An authenticated caller of the same server still gets the keys and the full scan.
      const full = await http(open.base, 'GET', `/tables/${table}/expiring?limit=100000`, read);
      expect(full.json()).toMatchObject({ scanned: 1200, expiredNow: 1200, truncated: false });
      expect((full.json() as { sampleKeys: Item[] }).sampleKeys).toHaveLength(10);
    } finally {
      await deleteTestTable(open.ddb, open.config.tables.control);
      await open.close();
    }
  });

  it('refuses a table whose TTL is DISABLED, since there are no settings to evaluate with', async () => {
    const table = await createTestTable(cp.ddb, uniqueName('prevd'));
    tables.push(table);
    const res = await http(cp.base, 'GET', `/tables/${table}/expiring`, read);
    expect(res.status).toBe(409);
    expect(res.json()).toEqual({
      error: 'conflict',
      message: expect.stringContaining(`TimeToLive is DISABLED on table ${table}`),
    });
  });

  it('gives a binary key attribute as base64 in sampleKeys, as DynamoDB JSON does (through the typed client)', async () => {
    const table = await createTestTable(cp.ddb, uniqueName('prevb'), { hashKey: 'pk', hashType: 'B' });
    tables.push(table);
    const now = Math.floor(Date.now() / 1000);
    await seed(table, [{ pk: { B: new Uint8Array([0, 1, 254, 255]) }, exp: N(now - 100) }]);
    const client = new TtlstreamClient({ baseUrl: cp.base, token: TOKEN });
    await client.putTtl(table, {
      enabled: true,
      settings: { policy: { mode: 'dynamodb', attributeName: 'exp' } },
    });
    const preview = await client.previewExpiring(table, { within: 60 });
    expect(preview).toMatchObject({ scanned: 1, expiredNow: 1 });
    expect(preview.sampleKeys).toEqual([{ pk: { B: Buffer.from([0, 1, 254, 255]).toString('base64') } }]);
  });
});
