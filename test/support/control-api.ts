import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import type { FastifyInstance } from 'fastify';
import { createDynamoClient } from '../../core/clients';
import { parseConfig, type ConfigInput } from '../../core/config';
import { apiOptionsFrom, buildApiServer } from '../../control/api/server';
import { TtlSettingsStore } from '../../control/settings-store';
import { capturingLogger } from './logger';

/**
 * The control plane's HTTP edge in tests: a server with no database behind it, real HTTP requests, and requests
 * signed as the AWS SDK signs them.
 */

/** The hash constructor @smithy/signature-v4 expects, over node:crypto. */
export class Sha256 {
  private readonly h: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', toBytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.h.update(toBytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.h.digest());
  }
  reset(): void {}
}

function toBytes(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Headers of a DynamoDB JSON request signed by the AWS SDK's signer. */
export async function signDynamoRequest(options: {
  host: string;
  target: string;
  body: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  region: string;
  at?: Date;
  contentType?: string;
}): Promise<Record<string, string>> {
  const signer = new SignatureV4({
    service: 'dynamodb',
    region: options.region,
    credentials: options.credentials,
    sha256: Sha256,
    applyChecksum: false,
  });
  const request = {
    method: 'POST',
    protocol: 'http:',
    hostname: options.host.split(':')[0],
    path: '/',
    query: {},
    headers: {
      host: options.host,
      'content-type': options.contentType ?? 'application/x-amz-json-1.0',
      'x-amz-target': options.target,
    },
    body: options.body,
  } as unknown as HttpRequest;
  const out = await signer.sign(request, { signingDate: options.at ?? new Date() });
  return Object.fromEntries(Object.entries(out.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
}

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  json: () => unknown;
}

/** A real HTTP request (fastify's inject needs an ESM-only module jest cannot load). */
export async function http(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | object } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as unknown };
}

/**
 * The control plane's API on a random local port with no database behind it (its DynamoDB endpoint refuses
 * connections, so a request that reaches the store fails): `token` and `key` are its credentials, `api` further
 * settings. What is left to test is the HTTP edge. Its log is kept in `logs`.
 */
export async function apiWithoutDatabase(
  token: string,
  key: { accessKeyId: string; secretAccessKey: string },
  api: ConfigInput['api'] = {},
): Promise<{ app: FastifyInstance; base: string; port: number; logs: ReturnType<typeof capturingLogger> }> {
  const config = parseConfig({
    dynamodb: { endpoint: 'http://127.0.0.1:9', maxAttempts: 1 },
    api: { tokens: [token], awsCredentials: [key], bodyLimitBytes: 2048, ...api },
  });
  const ddb = createDynamoClient(config);
  const store = new TtlSettingsStore(ddb, { controlTable: config.tables.control, propagationMs: 10 });
  const logs = capturingLogger();
  const app = buildApiServer({ options: apiOptionsFrom(config), ddb, store, logger: logs.logger });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base, port: Number(new URL(base).port), logs };
}
