import { deleteTestTable, newTable, uniqueName } from '../../support/stack';
import { TOKEN, http, startControlPlane, waitUntil, type ControlPlane } from './control-plane.support';
import { dynamodbTtl } from '../../support/ttl-settings';

type Json = Record<string, unknown>;
const auth = { authorization: `Bearer ${TOKEN}` };

describe('control plane REST API over HTTP, against the DynamoDB API', () => {
  let cp: ControlPlane;
  const tables: string[] = [];

  beforeAll(async () => {
    cp = await startControlPlane({ propagationMs: 2000 }); // outlasts any request of a loaded machine
  });
  afterAll(async () => {
    for (const t of [...tables, cp.config.tables.control]) await deleteTestTable(cp.ddb, t);
    await cp.close();
  });

  it('enable → ENABLING → refused while in progress → ENABLED → other attribute refused → disable → DISABLED', async () => {
    const table = await newTable(cp.ddb, 'rest', tables);
    const path = `/tables/${table}/ttl`;

    const before = await http(cp.base, 'GET', path, { headers: auth });
    expect(before.status).toBe(200);
    expect(before.json()).toMatchObject({ table, status: 'DISABLED', settings: null });

    const enable = await http(cp.base, 'PUT', path, {
      headers: auth,
      body: { enabled: true, settings: dynamodbTtl('expiresAt') },
    });
    expect(enable.status).toBe(200);
    const enabling = enable.json() as Json;
    expect(enabling).toMatchObject({
      table,
      status: 'ENABLING',
      settings: dynamodbTtl('expiresAt'),
      changedBy: 'token#0',
    });
    expect(enabling.statusSettlesAt).toBe((enabling.changedAt as number) + 2000);

    const busy = await http(cp.base, 'PUT', path, { headers: auth, body: { enabled: false } });
    expect(busy.status).toBe(409);
    expect(busy.json()).toEqual({
      error: 'conflict',
      message: 'Time to live has been modified multiple times within a fixed interval',
    });

    await waitUntil(enabling.statusSettlesAt as number);
    expect((await http(cp.base, 'GET', path, { headers: auth })).json()).toMatchObject({
      status: 'ENABLED',
      settings: dynamodbTtl('expiresAt'),
    });

    const other = await http(cp.base, 'PUT', path, {
      headers: auth,
      body: { enabled: true, settings: dynamodbTtl('ttl') },
    });
    expect(other.status).toBe(409);
    expect((other.json() as Json).message).toBe(
      'TimeToLive is active on a different AttributeName: current AttributeName is expiresAt; disable TTL first',
    );

    const same = await http(cp.base, 'PUT', path, {
      headers: auth,
      body: { enabled: true, settings: dynamodbTtl('expiresAt') },
    });
    expect(same.status).toBe(200);
    expect(same.json()).toMatchObject({ status: 'ENABLED', changedAt: enabling.changedAt });

    const listed = (await http(cp.base, 'GET', '/tables', { headers: auth })).json() as { tables: Json[] };
    expect(listed.tables).toContainEqual(expect.objectContaining({ table, status: 'ENABLED' }));
    expect(listed.tables.map((t) => t.table)).not.toContain(cp.config.tables.control);

    const disable = await http(cp.base, 'PUT', path, { headers: auth, body: { enabled: false } });
    expect(disable.status).toBe(200);
    const disabling = disable.json() as Json;
    expect(disabling).toMatchObject({ status: 'DISABLING', settings: dynamodbTtl('expiresAt') });
    await waitUntil(disabling.statusSettlesAt as number);
    expect((await http(cp.base, 'GET', path, { headers: auth })).json()).toMatchObject({
      status: 'DISABLED',
      settings: null,
    });
  });

  it('answers an unknown table with 404 on every table route', async () => {
    const missing = uniqueName('nope');
    for (const [method, path, body] of [
      ['GET', `/tables/${missing}/ttl`, undefined],
      ['PUT', `/tables/${missing}/ttl`, { enabled: true, settings: dynamodbTtl('exp') }],
      ['GET', `/tables/${missing}/expiring`, undefined],
    ] as const) {
      const res = await http(cp.base, method, path, { headers: auth, ...(body ? { body } : {}) });
      expect(res.status).toBe(404);
      expect(res.json()).toEqual({
        error: 'not-found',
        message: `Requested resource not found: Table: ${missing} not found`,
      });
    }
  });

  it.each<[string, unknown, string]>([
    [
      'an empty attribute name',
      { enabled: true, settings: dynamodbTtl('') },
      'body.settings.policy.attributeName: attribute name must not be empty',
    ],
    [
      'an unknown mode',
      { enabled: true, settings: { policy: { mode: 'redis' } } },
      'body.settings.policy.mode:',
    ],
    ['enabled as a string', { enabled: 'true' }, 'body.enabled: expected true or false'],
    ['enable without settings', { enabled: true }, 'body.settings: required when enabled is true'],
    ['a misspelt field', { enabld: true }, 'body: unknown field "enabld"'],
    [
      'a negative cosmos default',
      { enabled: true, settings: { policy: { mode: 'cosmos', defaultTtl: -7 } } },
      'body.settings.policy.defaultTtl:',
    ],
  ])('answers %s with 400 naming the field', async (_name, body, message) => {
    const table = tables[0] ?? (await newTable(cp.ddb, 'rest', tables));
    const res = await http(cp.base, 'PUT', `/tables/${table}/ttl`, { headers: auth, body: body as object });
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({ error: 'validation-error', message: expect.stringContaining(message) });
  });

  it('answers a missing or wrong token with 401 and changes nothing', async () => {
    const table = await newTable(cp.ddb, 'rest', tables);
    const path = `/tables/${table}/ttl`;
    const body = { enabled: true, settings: dynamodbTtl('exp') };
    expect((await http(cp.base, 'PUT', path, { body })).status).toBe(401);
    expect(
      (await http(cp.base, 'PUT', path, { body, headers: { authorization: 'Bearer not-the-token-at-all' } }))
        .status,
    ).toBe(401);
    expect((await http(cp.base, 'PUT', path, { body, headers: { authorization: TOKEN } })).status).toBe(401);
    expect((await http(cp.base, 'GET', path, { headers: auth })).json()).toMatchObject({
      status: 'DISABLED',
    });
  });

  it('is ready when DynamoDB answers, and never logs the token', async () => {
    expect((await http(cp.base, 'GET', '/readyz')).json()).toEqual({ status: 'ready' });
    const log = cp.logs.text();
    expect(log).toContain('"route":"PUT /tables/:table/ttl"');
    expect(log).not.toContain(TOKEN);
  });
});
