import type { input, output } from 'zod';
import type {
  ApiErrorCode,
  GuardCancelSchema,
  GuardSchema,
  PreviewSchema,
  TableListSchema,
  TtlDescriptionSchema,
} from '../control/api/responses';
import type { PutTtlBodySchema, TtlSettingsSchema } from '../control/api/schemas';
import type { ErrorCode } from '../core/error-codes';
import { TtlstreamError } from '../core/errors';

/**
 * A typed client of ttlstream's control-plane REST API (`ttlstream/client`), for TypeScript teams. Its types come
 * from the zod schemas the server validates with and its OpenAPI document is made of (control/api/schemas.ts,
 * responses.ts), imported as types only: at run time the client needs `fetch` (Node 18+) and ttlstream's error
 * classes, nothing else.
 *
 * - A 503 with `Retry-After` (too many connections, the DynamoDB API throttling or down, a server shutting down) is
 *   retried after the time it asks for, up to `maxAttempts` in all.
 * - Every other error answer rejects with a TtlstreamApiError carrying the API's stable code as `apiCode`
 *   (`not-found`, `conflict`, `validation-error`, ...) and its message.
 *
 * Clients in other languages: generate one from the OpenAPI document (`ttlstream api openapi`, docs/openapi.json).
 */

export type TtlDescription = output<typeof TtlDescriptionSchema>;
export type TableList = output<typeof TableListSchema>;
export type Preview = output<typeof PreviewSchema>;
export type Guard = output<typeof GuardSchema>;
export type GuardCancel = output<typeof GuardCancelSchema>;
export type TableTtlSettingsInput = input<typeof TtlSettingsSchema>;
export type PutTtlBody = input<typeof PutTtlBodySchema>;
export type { ApiErrorCode };

export interface TtlstreamClientOptions {
  /** The API's base URL, e.g. `http://ttlstream-api:8080`. */
  baseUrl: string;
  /** A bearer token (one of the server's `api.tokens`); without one, only open reads and health work. */
  token?: string;
  /** Attempts per call when the server answers 503 with Retry-After (default 3). */
  maxAttempts?: number;
  /** The longest Retry-After honoured, in ms (default 30 000); a longer one is waited this long. */
  maxRetryAfterMs?: number;
  /** Per attempt (default 30 000 ms). */
  timeoutMs?: number;
}

/**
 * An error answer of the API: `apiCode` is its stable machine code, `status` the HTTP status. Part of ttlstream's
 * error tree (`code` TTLSTREAM_API_ANSWER); `retryable` when the server was unavailable (503).
 */
export class TtlstreamApiError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_API_ANSWER';
  constructor(
    readonly status: number,
    /** The body's `error` (ApiErrorCode), or `http-<status>` when the answer was not the API's (a proxy's page). */
    readonly apiCode: ApiErrorCode | `http-${number}`,
    message: string,
    /** The attempts made, retries included. */
    readonly attempts: number,
  ) {
    super(message, { retryable: status === 503 });
  }
}

const DEFAULTS = { maxAttempts: 3, maxRetryAfterMs: 30_000, timeoutMs: 30_000 };

/** Seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

function isApiError(body: unknown): body is { error: ApiErrorCode; message: string } {
  return (
    typeof body === 'object' &&
    body !== null &&
    'error' in body &&
    typeof body.error === 'string' &&
    'message' in body &&
    typeof body.message === 'string'
  );
}

export class TtlstreamClient {
  private readonly base: string;
  private readonly options: Required<Omit<TtlstreamClientOptions, 'token' | 'baseUrl'>>;

  constructor(private readonly settings: TtlstreamClientOptions) {
    this.base = settings.baseUrl.replace(/\/+$/, '');
    this.options = {
      maxAttempts: settings.maxAttempts ?? DEFAULTS.maxAttempts,
      maxRetryAfterMs: settings.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
      timeoutMs: settings.timeoutMs ?? DEFAULTS.timeoutMs,
    };
    if (!Number.isInteger(this.options.maxAttempts) || this.options.maxAttempts < 1)
      throw new RangeError(`maxAttempts must be a whole number ≥ 1, not ${settings.maxAttempts}`);
  }

  /** GET /tables: every table and its TTL status. */
  listTables(): Promise<TableList> {
    return this.call('GET', '/tables');
  }

  /** GET /tables/{table}/ttl. */
  getTtl(table: string): Promise<TtlDescription> {
    return this.call('GET', `/tables/${encodeURIComponent(table)}/ttl`);
  }

  /** PUT /tables/{table}/ttl: `{ enabled: true, settings }` or `{ enabled: false }`. */
  putTtl(table: string, body: PutTtlBody): Promise<TtlDescription> {
    return this.call('PUT', `/tables/${encodeURIComponent(table)}/ttl`, body);
  }

  /** GET /tables/{table}/expiring: what TTL would delete now and within `within` seconds. */
  previewExpiring(table: string, query: { within?: number; limit?: number } = {}): Promise<Preview> {
    const params = new URLSearchParams();
    if (query.within !== undefined) params.set('within', String(query.within));
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    const qs = params.size > 0 ? `?${params.toString()}` : '';
    return this.call('GET', `/tables/${encodeURIComponent(table)}/expiring${qs}`);
  }

  /** GET /tables/{table}/guard. */
  getGuard(table: string): Promise<Guard> {
    return this.call('GET', `/tables/${encodeURIComponent(table)}/guard`);
  }

  /** POST /tables/{table}/guard/confirm: resume deletions on a table the guard paused. */
  confirmGuard(table: string): Promise<Guard> {
    return this.call('POST', `/tables/${encodeURIComponent(table)}/guard/confirm`);
  }

  /** POST /tables/{table}/guard/cancel: discard a paused table's pending marks. */
  cancelGuard(table: string): Promise<GuardCancel> {
    return this.call('POST', `/tables/${encodeURIComponent(table)}/guard/cancel`);
  }

  /** GET /readyz: resolves when the server and its DynamoDB API answer; rejects with code `not-ready` else. */
  ready(): Promise<{ status: 'ready' }> {
    return this.call('GET', '/readyz');
  }

  /** GET /metrics: the Prometheus text. */
  async metrics(): Promise<string> {
    const res = await this.send('GET', '/metrics');
    return res.text();
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body);
    return (await res.json()) as T;
  }

  /** One call: retried while the server answers 503 with Retry-After; any other error answer throws. */
  private async send(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.settings.token !== undefined) headers.authorization = `Bearer ${this.settings.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      if (res.ok) return res;
      const wait = res.status === 503 ? retryAfterMs(res.headers.get('retry-after'), Date.now()) : undefined;
      if (wait !== undefined && attempt < this.options.maxAttempts) {
        await res.body?.cancel();
        await sleep(Math.min(wait, this.options.maxRetryAfterMs));
        continue;
      }
      throw await this.errorOf(res, method, path, attempt);
    }
  }

  private async errorOf(
    res: Response,
    method: string,
    path: string,
    attempts: number,
  ): Promise<TtlstreamApiError> {
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const where = `${method} ${path}`;
    if (isApiError(body))
      return new TtlstreamApiError(
        res.status,
        body.error,
        `${where}: ${res.status} ${body.error}: ${body.message}`,
        attempts,
      );
    return new TtlstreamApiError(
      res.status,
      `http-${res.status}`,
      `${where}: ${res.status} ${text.slice(0, 200)}`,
      attempts,
    );
  }
}
