import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ConnectionOptions } from 'node:tls';
import type { TtlstreamConfig } from './config';
import { envName } from './config';
import { ConfigError, ConflictError, ServiceError, ValidationError } from './errors';
import { tlsOptionsOf } from './kafka-tls';

export type RegistrySettings = NonNullable<TtlstreamConfig['schemas']['registry']>;

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';
/** A registry's answers are small; more than this is not a registry. */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

function setting(field: keyof RegistrySettings): string {
  return `schemas.registry.${field} (${envName(['schemas', 'registry', field])})`;
}

interface Reply {
  status: number;
  body: unknown;
}

/**
 * The part of the Confluent Schema Registry REST API ttlstream uses (Apicurio's `/apis/ccompat/v7` serves the same):
 * register a schema under a subject, look one up, set a subject's compatibility. Errors name the setting:
 * transport failures, timeouts and 5xx are retryable ServiceErrors; 401/403 are not; 409 (incompatible) is a
 * ConflictError, 422 (invalid schema) a ValidationError.
 */
export class SchemaRegistryClient {
  private readonly base: URL;
  private readonly tls: ConnectionOptions | undefined;

  constructor(private readonly settings: RegistrySettings) {
    this.base = new URL(settings.url.endsWith('/') ? settings.url : `${settings.url}/`);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:')
      throw new ConfigError(`${setting('url')} ${settings.url}: expected an http or https URL`);
    const tls = settings.ssl ? tlsOptionsOf(settings.ssl, ['schemas', 'registry', 'ssl']) : {};
    this.tls = tls === false ? undefined : tls;
  }

  get url(): string {
    return this.settings.url;
  }

  /** Registers `schema` (Avro JSON text) under `subject`; the id it has, new or already registered. */
  async register(subject: string, schema: string): Promise<number> {
    const reply = await this.call('POST', `subjects/${encodeURIComponent(subject)}/versions`, { schema });
    return idOf(reply, `register under ${subject}`);
  }

  /** The id of `schema` under `subject`; undefined when the subject or that schema is not registered. */
  async lookup(subject: string, schema: string): Promise<number | undefined> {
    const reply = await this.call('POST', `subjects/${encodeURIComponent(subject)}`, { schema }, [404]);
    if (reply.status === 404) return undefined;
    return idOf(reply, `look up under ${subject}`);
  }

  /** Sets the compatibility level one subject is checked against (BACKWARD, FULL, …). */
  async setCompatibility(subject: string, level: string): Promise<void> {
    await this.call('PUT', `config/${encodeURIComponent(subject)}`, { compatibility: level });
  }

  /** The Avro text of a schema id. */
  async schemaById(id: number): Promise<string> {
    const reply = await this.call('GET', `schemas/ids/${id}`, undefined);
    const schema = (reply.body as { schema?: unknown }).schema;
    if (typeof schema !== 'string') throw this.malformed(`schemas/ids/${id}`, reply.body);
    return schema;
  }

  private authorization(): string | undefined {
    const s = this.settings;
    if (s.username !== undefined && s.password !== undefined)
      return `Basic ${Buffer.from(`${s.username}:${s.password}`).toString('base64')}`;
    if (s.bearerToken !== undefined) return `Bearer ${s.bearerToken}`;
    if (s.bearerTokenFile !== undefined) {
      // Read at every request, so a sidecar can rotate the token.
      let token: string;
      try {
        token = readFileSync(s.bearerTokenFile, 'utf8').trim();
      } catch (err) {
        throw new ConfigError(
          `${setting('bearerTokenFile')} ${s.bearerTokenFile}: ${(err as Error).message}`,
        );
      }
      if (token === '') throw new ConfigError(`${setting('bearerTokenFile')} ${s.bearerTokenFile}: empty`);
      return `Bearer ${token}`;
    }
    return undefined;
  }

  private async call(method: string, path: string, body: unknown, expected: number[] = []): Promise<Reply> {
    const url = new URL(path, this.base);
    const what = `schema registry ${method} ${url.pathname}`;
    let reply: Reply;
    try {
      reply = await this.send(method, url, body);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ServiceError(
        `${what}: ${(err as Error).message}; is ${setting('url')} ${this.settings.url} right and the registry up?`,
        { cause: err, retryable: true },
      );
    }
    if ((reply.status >= 200 && reply.status < 300) || expected.includes(reply.status)) return reply;
    const detail = describeError(reply.body);
    if (reply.status === 401 || reply.status === 403)
      throw new ServiceError(
        `${what}: refused (${reply.status} ${detail}); check ${setting('username')}/${setting('password')} or ${setting('bearerToken')}`,
        { retryable: false },
      );
    if (reply.status === 409) throw new ConflictError(`${what}: incompatible schema (409 ${detail})`);
    if (reply.status === 422) throw new ValidationError(`${what}: invalid schema (422 ${detail})`);
    throw new ServiceError(`${what}: ${reply.status} ${detail}`, {
      retryable: reply.status >= 500 || reply.status === 429 || reply.status === 408,
    });
  }

  private send(method: string, url: URL, body: unknown): Promise<Reply> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const headers: Record<string, string> = { accept: CONTENT_TYPE };
    if (payload) {
      headers['content-type'] = CONTENT_TYPE;
      headers['content-length'] = String(payload.length);
    }
    const auth = this.authorization();
    if (auth) headers.authorization = auth;
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Reply>((resolve, reject) => {
      const req = request(
        url,
        { method, headers, timeout: this.settings.requestTimeoutMs, ...(this.tls ?? {}) },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_RESPONSE_BYTES)
              req.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
            else chunks.push(c);
          });
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text === '' ? {} : JSON.parse(text);
            } catch {
              // not JSON (a proxy's error page): kept as text for the message
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('timeout', () =>
        req.destroy(new Error(`no response within ${this.settings.requestTimeoutMs} ms`)),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  private malformed(what: string, body: unknown): ServiceError {
    return new ServiceError(
      `schema registry ${what}: unexpected answer ${JSON.stringify(body).slice(0, 200)}; is ${setting('url')} ${this.settings.url} a Confluent-compatible API?`,
    );
  }
}

function idOf(reply: Reply, what: string): number {
  const id = (reply.body as { id?: unknown } | null)?.id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0)
    throw new ServiceError(
      `schema registry ${what}: no schema id in the answer ${JSON.stringify(reply.body).slice(0, 200)}`,
    );
  return id;
}

function describeError(body: unknown): string {
  if (body && typeof body === 'object') {
    const { error_code: code, message } = body as { error_code?: unknown; message?: unknown };
    if (typeof message === 'string') return code !== undefined ? `${String(code)}: ${message}` : message;
  }
  return typeof body === 'string' ? body.slice(0, 200) : JSON.stringify(body).slice(0, 200);
}
