import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../../core/config';
import { ConfigError, ConflictError, ServiceError, ValidationError } from '../../../core/errors';
import { SchemaRegistryClient, type RegistrySettings } from '../../../core/schema-registry';

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  contentType?: string;
  body: string;
}

/** A local HTTP server answering every request with `reply`; records what it was sent. */
async function server(
  reply: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const s: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
        body,
      });
      reply(req, res);
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/apis/ccompat/v7`,
    seen,
    close: () => new Promise<void>((resolve) => s.close(() => resolve())),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
  res.end(JSON.stringify(body));
}

function settings(url: string, extra: Partial<RegistrySettings> = {}): RegistrySettings {
  const parsed = parseConfig({ schemas: { registry: { url, ...extra } } }).schemas.registry;
  if (!parsed) throw new Error('no registry settings');
  return parsed;
}

describe('SchemaRegistryClient (Confluent REST API)', () => {
  it('registers under a subject below the base path, with basic authentication', async () => {
    const s = await server((_req, res) => json(res, 200, { id: 17 }));
    try {
      const client = new SchemaRegistryClient(settings(s.url, { username: 'u', password: 'p w' }));
      await expect(client.register('t.remove-value', '{"type":"string"}')).resolves.toBe(17);
      expect(s.seen).toEqual([
        {
          method: 'POST',
          url: '/apis/ccompat/v7/subjects/t.remove-value/versions',
          authorization: `Basic ${Buffer.from('u:p w').toString('base64')}`,
          contentType: 'application/vnd.schemaregistry.v1+json',
          body: JSON.stringify({ schema: '{"type":"string"}' }),
        },
      ]);
    } finally {
      await s.close();
    }
  });

  it('a lookup of what is not registered is undefined; a bearer token file is read at every request', async () => {
    const s = await server((req, res) =>
      req.url?.endsWith('/subjects/a-value')
        ? json(res, 404, { error_code: 40403, message: 'Schema not found' })
        : json(res, 200, { id: 3, version: 1 }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'registry-token-'));
    const file = join(dir, 'token');
    try {
      writeFileSync(file, 'first\n');
      const client = new SchemaRegistryClient(settings(s.url, { bearerTokenFile: file }));
      await expect(client.lookup('a-value', '"string"')).resolves.toBeUndefined();
      writeFileSync(file, 'second');
      await expect(client.lookup('b-value', '"string"')).resolves.toBe(3);
      expect(s.seen.map((x) => x.authorization)).toEqual(['Bearer first', 'Bearer second']);
      writeFileSync(file, '');
      await expect(client.lookup('b-value', '"string"')).rejects.toThrow(
        /schemas\.registry\.bearerTokenFile \(TTLSTREAM_SCHEMAS_REGISTRY_BEARER_TOKEN_FILE\) .*: empty/,
      );
    } finally {
      await s.close();
    }
  });

  it.each([
    [
      409,
      'ConflictError',
      ConflictError,
      /incompatible schema \(409 409: Schema being registered is incompatible/,
      false,
    ],
    [422, 'ValidationError', ValidationError, /invalid schema \(422/, false],
    [401, 'ServiceError', ServiceError, /refused \(401 .*check schemas\.registry\.username/, false],
    [503, 'ServiceError', ServiceError, /503/, true],
  ])('a %i answer is a %s', async (status, _name, type, message, retryable) => {
    const s = await server((_req, res) =>
      json(res, status, {
        error_code: status,
        message: 'Schema being registered is incompatible with an earlier schema',
      }),
    );
    try {
      const err = await new SchemaRegistryClient(settings(s.url))
        .register('x-value', '"string"')
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(type);
      expect((err as Error).message).toMatch(message);
      expect((err as ServiceError).retryable).toBe(retryable);
    } finally {
      await s.close();
    }
  });

  it('an unreachable registry is a retryable ServiceError naming the setting', async () => {
    const s = await server(() => undefined);
    const url = s.url;
    await s.close();
    const err = await new SchemaRegistryClient(settings(url))
      .register('x-value', '"string"')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).retryable).toBe(true);
    expect((err as Error).message).toContain('schemas.registry.url (TTLSTREAM_SCHEMAS_REGISTRY_URL)');
  });

  it('a registry that does not answer fails after requestTimeoutMs', async () => {
    const s = await server(() => undefined); // never answers
    try {
      const client = new SchemaRegistryClient(settings(s.url, { requestTimeoutMs: 200 }));
      await expect(client.register('x-value', '"string"')).rejects.toThrow(/no response within 200 ms/);
    } finally {
      s.seen.length = 0;
      await s.close().catch(() => undefined);
    }
  });

  it('settings: basic needs both halves, basic and bearer exclude each other, TLS files are checked at construction', () => {
    expect(() => parseConfig({ schemas: { registry: { url: 'http://r', username: 'u' } } })).toThrow(
      /schemas\.registry\.password.*both username and password/s,
    );
    expect(() =>
      parseConfig({
        schemas: { registry: { url: 'http://r', username: 'u', password: 'p', bearerToken: 't' } },
      }),
    ).toThrow(/not both/);
    expect(() => parseConfig({ schemas: { registry: { url: 'not a url' } } })).toThrow(
      /schemas\.registry\.url/,
    );
    expect(
      () =>
        new SchemaRegistryClient(
          settings('https://r:1', { ssl: { caFile: '/nonexistent/ca.pem', rejectUnauthorized: true } }),
        ),
    ).toThrow(ConfigError);
    expect(
      () =>
        new SchemaRegistryClient(
          settings('https://r:1', { ssl: { caFile: '/nonexistent/ca.pem', rejectUnauthorized: true } }),
        ),
    ).toThrow(/schemas\.registry\.ssl\.caFile \(TTLSTREAM_SCHEMAS_REGISTRY_SSL_CA_FILE\)/);
  });
});
