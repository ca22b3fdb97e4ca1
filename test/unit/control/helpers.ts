import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { Writable } from 'node:stream';
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import pino from 'pino';
import type { Logger } from '../../../core/logger';

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

/** A trace-level logger whose every line is kept, to check what reaches the log. */
export function capturingLogger(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'trace' }, sink), text: () => lines.join('') };
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
