import type { FastifyInstance } from 'fastify';
import { apiWithoutDatabase, http, signDynamoRequest } from '../../../support/control-api';
import type { capturingLogger } from '../../../support/logger';

/**
 * The HTTP edge without a database: every request here is refused (auth, validation, parsing)
 * before the store is reached. A store call would fail, because the endpoint below has no server.
 */
const TOKEN = 'unit-token-0123456789abcdef';
const KEY = { accessKeyId: 'AKIDUNIT', secretAccessKey: 'unit-secret-abcdefghijklmnop' };

type Body = Record<string, unknown>;

const validBody = { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } } };
const auth = { authorization: `Bearer ${TOKEN}` };

describe('REST edge', () => {
  let app: FastifyInstance;
  let logs: ReturnType<typeof capturingLogger>;
  let base: string;
  beforeAll(async () => {
    ({ app, logs, base } = await apiWithoutDatabase(TOKEN, KEY));
  });
  afterAll(() => app.close());

  it('refuses a mutation without a token, or with a wrong one, with 401 and a challenge', async () => {
    const none = await http(base, 'PUT', '/tables/orders/ttl', { body: validBody });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="ttlstream"');
    expect(none.json()).toEqual({
      error: 'unauthorized',
      message: 'missing Authorization header: expected "Authorization: Bearer <token>"',
    });
    const wrong = await http(base, 'PUT', '/tables/orders/ttl', {
      headers: { authorization: 'Bearer wrong-token-0000000000' },
      body: validBody,
    });
    expect(wrong.status).toBe(401);
    expect((wrong.json() as Body).message).toBe('invalid bearer token');
  });

  it('answers a bad body with 400 naming the field', async () => {
    const res = await http(base, 'PUT', '/tables/orders/ttl', {
      headers: auth,
      body: { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: '' } } },
    });
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({
      error: 'validation-error',
      message: 'body.settings.policy.attributeName: attribute name must not be empty',
    });
  });

  it('answers a body with a __proto__ key with 400 "forbidden key", not "not valid JSON"', async () => {
    const headers = { ...auth, 'content-type': 'application/json' };
    const res = await http(base, 'PUT', '/tables/orders/ttl', {
      headers,
      body: '{"enabled": true, "__proto__": {"admin": true}}',
    });
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({
      error: 'forbidden-key',
      message: 'body: forbidden key "__proto__"',
    });
  });

  it('answers invalid JSON with 400, an oversized body with 413, another media type with 415', async () => {
    const headers = { ...auth, 'content-type': 'application/json' };
    const bad = await http(base, 'PUT', '/tables/orders/ttl', { headers, body: '{"enabled": tru' });
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({
      error: 'invalid-json',
      message: expect.stringMatching(/^body: not valid JSON/),
    });

    const big = JSON.stringify({ ...validBody, pad: 'x'.repeat(4096) });
    const large = await http(base, 'PUT', '/tables/orders/ttl', { headers, body: big });
    expect(large.status).toBe(413);
    expect(large.json()).toEqual({
      error: 'payload-too-large',
      message: 'body: larger than the limit of 2048 bytes (api.bodyLimitBytes)',
    });

    const text = await http(base, 'PUT', '/tables/orders/ttl', {
      headers: { ...auth, 'content-type': 'application/xml' },
      body: '<enabled/>',
    });
    expect(text.status).toBe(415);
    expect((text.json() as Body).error).toBe('unsupported-media-type');

    const empty = await http(base, 'PUT', '/tables/orders/ttl', { headers: auth });
    expect(empty.status).toBe(400);
    expect((empty.json() as Body).message).toBe('body: expected object, received undefined');
  });

  it('validates path and query parameters', async () => {
    const short = await http(base, 'GET', '/tables/ab/ttl', { headers: auth });
    expect(short.status).toBe(400);
    expect((short.json() as Body).message).toBe('params.table: table names are at least 3 characters');
    const within = await http(base, 'GET', '/tables/orders/expiring?within=-1', { headers: auth });
    expect(within.status).toBe(400);
    expect((within.json() as Body).message).toBe('query.within: within must be a whole number');
  });

  it('answers URL errors found by the router in the same shape, and allows 255-character table names', async () => {
    const bad = await http(base, 'GET', '/tables/%E0%A4%A/ttl');
    expect(bad.status).toBe(400);
    expect(bad.json()).toEqual({
      error: 'bad-request',
      message: "url: '/tables/%E0%A4%A/ttl' is not a valid url component",
    });
    // Longer than the router's default parameter cap (100), so this reaches validation.
    const long = await http(base, 'GET', `/tables/${'a'.repeat(256)}/ttl`, { headers: auth });
    expect(long.status).toBe(400);
    expect((long.json() as Body).message).toBe('params.table: table names are at most 255 characters');
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await http(base, 'GET', '/nope?x=1');
    expect(res.status).toBe(404);
    expect(res.json()).toEqual({ error: 'not-found', message: 'no route GET /nope' });
    // A path of no route, whatever the method; a route path with one segment more or less is another path.
    expect((await http(base, 'DELETE', '/tables/orders/ttl/x')).status).toBe(404);
    expect((await http(base, 'POST', '/tables/orders')).status).toBe(404);
  });

  it('answers a method a route path does not serve with 405 and Allow (RFC 9110), before any token', async () => {
    const ttl = await http(base, 'DELETE', '/tables/orders/ttl?x=1');
    expect(ttl.status).toBe(405);
    expect(ttl.headers.get('allow')).toBe('GET, HEAD, PUT');
    expect(ttl.json()).toEqual({
      error: 'method-not-allowed',
      message: 'DELETE is not served at /tables/orders/ttl; it serves GET, HEAD, PUT',
    });
    const confirm = await http(base, 'GET', '/tables/orders/guard/confirm');
    expect([confirm.status, confirm.headers.get('allow')]).toEqual([405, 'POST']);
    expect((await http(base, 'PATCH', '/healthz')).headers.get('allow')).toBe('GET, HEAD');
    // The AWS-compatible endpoint is a route too.
    expect((await http(base, 'GET', '/')).headers.get('allow')).toBe('POST');
    // A method with a body is answered before the body is read (fastify would refuse QUERY without a content type).
    const query = await http(base, 'QUERY', '/tables/orders/guard');
    expect([query.status, query.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect((await http(base, 'QUERY', '/nope')).status).toBe(404);
    // What is served still is.
    expect((await http(base, 'HEAD', '/healthz')).status).toBe(200);
  });

  it('serves /healthz, and /metrics with request counts by route and status', async () => {
    expect((await http(base, 'GET', '/healthz')).json()).toEqual({ status: 'ok' });
    const res = await http(base, 'GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.text).toMatch(
      /ttlstream_api_requests_total\{route="PUT \/tables\/:table\/ttl",status="401"\} [1-9]/,
    );
    expect(res.text).toMatch(/ttlstream_api_requests_total\{route="GET \/healthz",status="200"\} [1-9]/);
  });

  it('answers /readyz with 503 when the DynamoDB API cannot be reached', async () => {
    const res = await http(base, 'GET', '/readyz');
    expect(res.status).toBe(503);
    expect((res.json() as Body).error).toBe('not-ready');
  });

  it('never logs the token, valid or not', () => {
    expect(logs.text()).toContain('"route":"PUT /tables/:table/ttl"');
    expect(logs.text()).not.toContain(TOKEN);
    expect(logs.text()).not.toContain('wrong-token-0000000000');
  });
});

describe('openReads', () => {
  it('when false, reads need a token too; health and metrics stay open', async () => {
    const { app, base } = await apiWithoutDatabase(TOKEN, KEY, { openReads: false });
    try {
      expect((await http(base, 'GET', '/tables')).status).toBe(401);
      expect((await http(base, 'GET', '/metrics')).status).toBe(200);
      expect((await http(base, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('when true, a read with a wrong token is still refused', async () => {
    const { app, base } = await apiWithoutDatabase(TOKEN, KEY, { openReads: true });
    try {
      const res = await http(base, 'GET', '/tables', {
        headers: { authorization: 'Bearer nope-nope-nope-nope' },
      });
      expect(res.status).toBe(401);
    } finally {
      await app.close();
    }
  });
});

describe('AWS-compatible endpoint edge', () => {
  let app: FastifyInstance;
  let logs: ReturnType<typeof capturingLogger>;
  let base: string;
  beforeAll(async () => {
    ({ app, logs, base } = await apiWithoutDatabase(TOKEN, KEY));
  });
  afterAll(() => app.close());

  const post = async (
    target: string,
    body: string,
    sign = true,
    contentType = 'application/x-amz-json-1.0',
  ) => {
    const host = new URL(base).host;
    const headers: Record<string, string> = sign
      ? await signDynamoRequest({ host, target, body, credentials: KEY, region: 'us-east-1', contentType })
      : { 'x-amz-target': target };
    delete headers.host;
    headers['content-type'] = contentType;
    return http(base, 'POST', '/', { headers, body });
  };

  it('refuses an unsigned UpdateTimeToLive with 403 MissingAuthenticationTokenException and a request id', async () => {
    const res = await post('DynamoDB_20120810.UpdateTimeToLive', '{"TableName":"orders"}', false);
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toBe('application/x-amz-json-1.0');
    expect(res.headers.get('x-amzn-requestid')).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json()).toEqual({
      __type: 'com.amazon.coral.service#MissingAuthenticationTokenException',
      message: 'Request is missing Authentication Token',
    });
  });

  it('answers other targets with UnknownOperationException', async () => {
    const res = await post('DynamoDB_20120810.DeleteTable', '{"TableName":"orders"}');
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({
      __type: 'com.amazon.coral.service#UnknownOperationException',
      message: 'Unknown operation: DynamoDB_20120810.DeleteTable',
    });
  });

  it('answers bad input with DynamoDB-style ValidationException and SerializationException', async () => {
    const missing = await post('DynamoDB_20120810.UpdateTimeToLive', '{"TableName":"orders"}');
    expect(missing.status).toBe(400);
    expect(missing.json()).toEqual({
      __type: 'com.amazonaws.dynamodb.v20120810#ValidationException',
      message:
        "1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null",
    });
    const empty = await post(
      'DynamoDB_20120810.UpdateTimeToLive',
      '{"TableName":"orders","TimeToLiveSpecification":{"Enabled":true,"AttributeName":""}}',
    );
    expect((empty.json() as Body).message).toBe(
      "1 validation error detected: Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1",
    );
    const json = await post('DynamoDB_20120810.DescribeTimeToLive', '{"TableName":');
    expect((json.json() as Body).__type).toBe('com.amazon.coral.service#SerializationException');
    const type = await post(
      'DynamoDB_20120810.DescribeTimeToLive',
      '{"TableName":"orders"}',
      true,
      'text/plain',
    );
    expect((type.json() as Body).__type).toBe('com.amazon.coral.service#SerializationException');
  });

  it('accepts Content-Type application/json, as DynamoDB does', async () => {
    // The body is read: its missing specification is named, as with DynamoDB's own content type.
    const body = '{"TableName":"orders"}';
    const amz = await post('DynamoDB_20120810.UpdateTimeToLive', body);
    const json = await post('DynamoDB_20120810.UpdateTimeToLive', body, true, 'application/json');
    expect(json.status).toBe(400);
    expect(json.json()).toEqual(amz.json());
    expect((json.json() as Body).__type).toBe('com.amazonaws.dynamodb.v20120810#ValidationException');
  });

  it('answers a body with a __proto__ key with "forbidden key", not "not valid JSON"', async () => {
    const res = await post(
      'DynamoDB_20120810.DescribeTimeToLive',
      '{"TableName":"orders","__proto__":{"x":1}}',
    );
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({
      __type: 'com.amazon.coral.service#SerializationException',
      message: 'Request body has a forbidden key "__proto__"',
    });
  });

  it('answers an oversized request with 413 in DynamoDB form', async () => {
    const res = await post(
      'DynamoDB_20120810.UpdateTimeToLive',
      JSON.stringify({ TableName: 'x'.repeat(4096) }),
    );
    expect(res.status).toBe(413);
    expect(res.json()).toEqual({
      __type: 'com.amazon.coral.service#RequestEntityTooLargeException',
      message: 'Request entity too large',
    });
  });

  it('checks the signature over the exact bytes received', async () => {
    const host = new URL(base).host;
    const body = '{"TableName":"orders","TimeToLiveSpecification":{"Enabled":true,"AttributeName":"exp"}}';
    const headers = await signDynamoRequest({
      host,
      target: 'DynamoDB_20120810.UpdateTimeToLive',
      body,
      credentials: KEY,
      region: 'us-east-1',
    });
    delete headers.host;
    const tampered = await http(base, 'POST', '/', { headers, body: body.replace('exp', 'exq') });
    expect(tampered.status).toBe(400);
    expect((tampered.json() as Body).__type).toBe('com.amazon.coral.service#InvalidSignatureException');
  });

  it('never logs the secret or the signature', () => {
    expect(logs.text()).toContain('aws:');
    expect(logs.text()).not.toContain(KEY.secretAccessKey);
    expect(logs.text()).not.toMatch(/Signature=/);
  });
});
