import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { TtlstreamApiError, TtlstreamClient } from '../../../client';
import { apiWithoutDatabase } from '../../support/control-api';

/**
 * The typed client (`ttlstream/client`) against the real server with no database behind it: error answers become
 * TtlstreamApiErrors with the API's code, and a 503 with Retry-After (here: more than api.maxConnections open) is
 * waited out and retried.
 */
const TOKEN = 'unit-token-0123456789abcdef';
const KEY = { accessKeyId: 'AKIDCLIENT', secretAccessKey: 'client-secret-abcdefghijklmnop' };

async function apiErrorOf(call: Promise<unknown>): Promise<TtlstreamApiError> {
  const err: unknown = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof TtlstreamApiError))
    throw new Error(`expected a TtlstreamApiError, got ${String(err)}`);
  return err;
}

/** A connection the server counts as open until it is destroyed. */
async function holdConnection(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((done) => socket.once('connect', () => done()));
  return socket;
}

describe('TtlstreamClient: error answers', () => {
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => ({ app, base } = await apiWithoutDatabase(TOKEN, KEY)));
  afterAll(() => app.close());

  it("rejects an error answer with the API's code, status and message", async () => {
    const client = new TtlstreamClient({ baseUrl: base, token: TOKEN });
    const invalid = await apiErrorOf(client.getTtl('ab'));
    expect(invalid).toMatchObject({ status: 400, apiCode: 'validation-error', attempts: 1 });
    expect(invalid.message).toBe(
      'GET /tables/ab/ttl: 400 validation-error: params.table: table names are at least 3 characters',
    );
    const anonymous = new TtlstreamClient({ baseUrl: base });
    expect(await apiErrorOf(anonymous.listTables())).toMatchObject({ status: 401, apiCode: 'unauthorized' });
    const body = await apiErrorOf(
      client.putTtl('orders', {
        enabled: true,
        settings: { policy: { mode: 'dynamodb', attributeName: '' } },
      }),
    );
    expect(body).toMatchObject({ apiCode: 'validation-error' });
    expect(body.message).toContain('body.settings.policy.attributeName: attribute name must not be empty');
  });

  it('does not retry a 503 that names no Retry-After (not ready)', async () => {
    const client = new TtlstreamClient({ baseUrl: base, token: TOKEN });
    expect(await apiErrorOf(client.ready())).toMatchObject({
      status: 503,
      apiCode: 'not-ready',
      attempts: 1,
    });
  });
});

describe('TtlstreamClient: 503 with Retry-After', () => {
  let app: FastifyInstance;
  let base: string;
  let port: number;
  // One connection allowed: a held one makes the client's 503 (Retry-After: 1).
  beforeAll(async () => ({ app, base, port } = await apiWithoutDatabase(TOKEN, KEY, { maxConnections: 1 })));
  afterAll(() => app.close());

  it('waits out a 503 with Retry-After and retries, until it succeeds', async () => {
    const held = await holdConnection(port);
    const client = new TtlstreamClient({ baseUrl: base, token: TOKEN });
    const started = Date.now();
    // The first attempt meets the cap and is told to come back in 1 s; the connection is free by then.
    setTimeout(() => held.destroy(), 300);
    const text = await client.metrics();
    expect(text).toContain('ttlstream_api_requests_total');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('gives up after maxAttempts with the last answer', async () => {
    const held = await holdConnection(port);
    try {
      const client = new TtlstreamClient({ baseUrl: base, token: TOKEN, maxAttempts: 2 });
      const err = await apiErrorOf(client.listTables());
      expect(err).toMatchObject({ status: 503, apiCode: 'unavailable', attempts: 2 });
      expect(err.message).toContain('api.maxConnections');
    } finally {
      held.destroy();
    }
  });
});
