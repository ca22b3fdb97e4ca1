import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { parseConfig } from '../../../../core/config';
import { hostAllowed } from '../../../../control/api/auth/sigv4';
import { apiWithoutDatabase, http, signDynamoRequest } from '../../../support/control-api';

/**
 * The control plane's security. No database behind the server (its endpoint refuses connections), so what is
 * checked is the HTTP edge.
 */
const TOKEN = 'unit-token-0123456789abcdef';
const KEY = { accessKeyId: 'AKIDHARD', secretAccessKey: 'hard-secret-abcdefghijklmnop' };
const auth = { authorization: `Bearer ${TOKEN}` };
type Body = Record<string, unknown>;

describe('secure by default', () => {
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => ({ app, base } = await apiWithoutDatabase(TOKEN, KEY)));
  afterAll(() => app.close());

  it('needs authentication for reads unless api.openReads is set; health, readiness and metrics stay open', async () => {
    expect(parseConfig({}).api.openReads).toBe(false);
    for (const path of ['/tables', '/tables/orders/ttl', '/tables/orders/expiring', '/tables/orders/guard']) {
      expect([path, (await http(base, 'GET', path)).status]).toEqual([path, 401]);
    }
    expect((await http(base, 'GET', '/healthz')).status).toBe(200);
    expect((await http(base, 'GET', '/readyz')).status).toBe(503); // open, but no database here
    expect((await http(base, 'GET', '/metrics')).status).toBe(200);
  });

  it('authenticates a mutation before reading its body: 401 whatever the body', async () => {
    const bodies: Array<[string, string]> = [
      ['application/json', '{"enabled": tru'],
      ['application/json', JSON.stringify({ pad: 'x'.repeat(8192) })],
      ['application/xml', '<enabled/>'],
      ['application/json', JSON.stringify({ enable: true })],
    ];
    for (const [type, body] of bodies) {
      for (const path of ['/tables/orders/ttl', '/tables/orders/guard/confirm']) {
        const method = path.endsWith('/ttl') ? 'PUT' : 'POST';
        const res = await http(base, method, path, { headers: { 'content-type': type }, body });
        expect([path, type, body.length, res.status]).toEqual([path, type, body.length, 401]);
        expect((res.json() as Body).error).toBe('unauthorized');
      }
    }
  });

  it('refuses an unsigned AWS call before reading its body (403, not 413)', async () => {
    const res = await http(base, 'POST', '/', {
      headers: {
        'x-amz-target': 'DynamoDB_20120810.UpdateTimeToLive',
        'content-type': 'application/x-amz-json-1.0',
      },
      body: JSON.stringify({ TableName: 'x'.repeat(8192) }),
    });
    expect(res.status).toBe(403);
    expect((res.json() as Body).__type).toBe('com.amazon.coral.service#MissingAuthenticationTokenException');
  });
});

describe('metrics label cardinality', () => {
  it('counts DynamoDB requests for made-up tables under "other", never one series per name', async () => {
    const { app, base } = await apiWithoutDatabase(TOKEN, KEY);
    try {
      for (let i = 0; i < 40; i++) await http(base, 'GET', `/tables/made-up-${i}/ttl`, { headers: auth });
      const text = (await http(base, 'GET', '/metrics')).text;
      expect(text).not.toContain('made-up-');
      expect(text).toMatch(
        /ttlstream_dynamodb_requests_total\{operation="DescribeTableCommand",table="other"\} ([4-9]\d|\d{3,})/,
      );
    } finally {
      await app.close();
    }
  });
});

describe('limits', () => {
  it('bounds error messages: 200 unknown fields, a long URL', async () => {
    const { app, base } = await apiWithoutDatabase(TOKEN, KEY, { bodyLimitBytes: 64 * 1024 });
    try {
      const body: Body = { enabled: false };
      for (let i = 0; i < 200; i++) body[`unknown_field_${i}_${'k'.repeat(50)}`] = 1;
      const res = await http(base, 'PUT', '/tables/orders/ttl', { headers: auth, body });
      expect(res.status).toBe(400);
      const message = (res.json() as Body).message as string;
      expect(message).toMatch(/^body: unknown fields "unknown_field_0_k+…", .* and 195 more$/);
      expect(message.length).toBeLessThanOrEqual(512);

      const long = await http(base, 'GET', `/tables/${'a'.repeat(12_000)}/ttl`, { headers: auth });
      expect(long.status).toBe(414);
      expect(long.text.length).toBeLessThan(700);
      const missing = await http(base, 'GET', `/nope/${'b'.repeat(12_000)}`);
      expect(missing.status).toBe(404);
      expect(missing.text.length).toBeLessThan(700);
    } finally {
      await app.close();
    }
  });

  it('closes a connection whose request headers never complete (api.headersTimeoutMs)', async () => {
    const { app, port } = await apiWithoutDatabase(TOKEN, KEY, {
      headersTimeoutMs: 300,
      requestTimeoutMs: 300,
    });
    try {
      const socket = connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      const started = Date.now();
      await closed(socket, 5000);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await app.close();
    }
  });

  it('over api.maxConnections: 503 with Retry-After; past 4 times it, connections are closed at once', async () => {
    const { app, port } = await apiWithoutDatabase(TOKEN, KEY, { maxConnections: 2 });
    const sockets: Socket[] = [];
    const open = async (): Promise<Socket> => {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      sockets.push(s);
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      return s;
    };
    try {
      for (let i = 0; i < 2; i++) await open();
      const third = await open();
      third.write('GET /tables HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        third.on('data', (b: Buffer) => (text += b.toString()));
        third.once('close', () => resolve(text));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(answer).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(answer).toContain(
        '{"error":"unavailable","message":"more than 2 open connections (api.maxConnections); retry after 1 s"}',
      );
      // The hard limit: 4 × 2 open connections; the next one is dropped without an answer.
      while (sockets.filter((s) => !s.destroyed).length < 8) await open();
      const dropped = await open();
      await closed(dropped, 3000);
    } finally {
      for (const s of sockets) s.destroy();
      await app.close();
    }
  });
});

describe('SigV4 hardening', () => {
  let app: FastifyInstance;
  let base: string;
  let port: number;
  beforeAll(
    async () => ({ app, base, port } = await apiWithoutDatabase(TOKEN, KEY, { hosts: ['ttl.example.com'] })),
  );
  afterAll(() => app.close());

  const post = async (host: string, extra: Record<string, string> = {}) => {
    const body = '{"TableName":"orders"}';
    const headers = await signDynamoRequest({
      host,
      target: 'DynamoDB_20120810.DescribeTimeToLive',
      body,
      credentials: KEY,
      region: 'us-east-1',
    });
    // fetch sets Host from the URL, so a request signed for another host is sent through a raw socket.
    return rawPost(port, { ...headers, ...extra, host }, body);
  };

  it('refuses a request signed for a host this server does not answer to', async () => {
    const res = await post(`dynamodb.us-east-1.amazonaws.com`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      __type: 'com.amazon.coral.service#InvalidSignatureException',
      message: expect.stringContaining("The signed Host 'dynamodb.us-east-1.amazonaws.com' is not a host"),
    });
    // A configured name and the loopback names pass the host check (and then fail only for lack of a database).
    for (const ok of [`ttl.example.com:${port}`, `127.0.0.1:${port}`, `localhost:${port}`]) {
      const accepted = await post(ok);
      expect([ok, (accepted.body as Body).__type]).toEqual([
        ok,
        'com.amazonaws.dynamodb.v20120810#InternalServerError',
      ]);
    }
    expect(base).toContain('127.0.0.1');
  });

  it('refuses X-Amz-Security-Token rather than ignoring it', async () => {
    const res = await post(`127.0.0.1:${port}`, { 'x-amz-security-token': 'FwoGZXIvYXdzEBYaDFAKE' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      __type: 'com.amazon.coral.service#UnrecognizedClientException',
      message: expect.stringMatching(
        /^The security token included in the request is invalid\..*api\.awsCredentials/,
      ),
    });
  });

  it('hostAllowed: names without port mean the listening port; a Host without port means 80', () => {
    expect(hostAllowed('Localhost:8080', 8080, [])).toBe(true);
    expect(hostAllowed('localhost:8081', 8080, [])).toBe(false);
    expect(hostAllowed('ttl.example.com', 8080, ['ttl.example.com:80'])).toBe(true);
    expect(hostAllowed('ttl.example.com', 8080, ['ttl.example.com'])).toBe(false);
    expect(hostAllowed('[::1]:8080', 8080, [])).toBe(true);
    expect(hostAllowed('evil.example:8080', 8080, ['ttl.example.com'])).toBe(false);
    expect(hostAllowed('a:b:c', 8080, ['a'])).toBe(false);
  });
});

function closed(socket: Socket, withinMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`socket still open after ${withinMs} ms`)), withinMs);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    socket.once('close', done);
    socket.resume();
  });
}

/** One HTTP/1.1 POST over a raw socket, so the Host header is exactly the one given. */
function rawPost(
  port: number,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const lines = Object.entries({
      ...headers,
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n');
    socket.write(`POST / HTTP/1.1\r\n${lines}\r\n\r\n${body}`);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const payload = text.slice(text.indexOf('\r\n\r\n') + 4);
      try {
        resolve({ status, body: JSON.parse(payload) as unknown });
      } catch {
        resolve({ status, body: payload });
      }
    });
  });
}
