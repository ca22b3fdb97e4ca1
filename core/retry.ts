import { setTimeout as sleep } from 'node:timers/promises';
import { TtlstreamError } from './errors';

export interface RetryOptions {
  retries: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /**
   * Return false to stop retrying and rethrow at once. Without it, everything is retried except a TtlstreamError
   * whose `retryable` is false (a lost lease, a bad argument: trying again cannot help).
   */
  isRetryable?: (err: unknown) => boolean;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  signal?: AbortSignal;
}

/** Exponential back-off with full jitter: the one retry loop of the code base. */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const initial = options.initialDelayMs ?? 100;
  const max = options.maxDelayMs ?? 10_000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      const retryable = options.isRetryable?.(err) ?? !(err instanceof TtlstreamError && !err.retryable);
      if (attempt >= options.retries || !retryable || options.signal?.aborted) throw err;
      const delay = Math.random() * Math.min(max, initial * 2 ** attempt);
      options.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, undefined, options.signal ? { signal: options.signal } : undefined);
    }
  }
}

/** The server says "too much, slow down": only these should lower a client-side rate. */
const THROTTLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

/** The server answered, the request is fine, but it lost a race; try again, no reason to slow down. */
const CONFLICT_NAMES = new Set(['TransactionConflictException']);

/**
 * The request never got an answer: the server is unreachable (restarting), the connection broke, or the client
 * gave up waiting. Node's `code` (`socket hang up` is ECONNRESET) or the SDK's `TimeoutError`.
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'TimeoutError',
  'RequestTimeout',
]);

/**
 * What the AWS SDK v3 puts on a service error: `$retryable` when the service model marks the error retryable
 * (with `throttling` when it is a throttle), and the HTTP status of the answer.
 */
type ErrorShape = {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: { throttling?: boolean };
};

function shape(err: unknown): ErrorShape | undefined {
  return typeof err === 'object' && err !== null ? (err as ErrorShape) : undefined;
}

/**
 * Real throttling: the DynamoDB API server answered that it is overloaded (throughput exceeded, throttled, request
 * limit, HTTP 429 or 5xx). Only this should lower a client-side rate limit; a refused or broken connection says
 * nothing about the server's capacity (see isConnectionError).
 */
export function isDynamoThrottle(err: unknown): boolean {
  const e = shape(err);
  if (!e) return false;
  if (e.name && THROTTLE_NAMES.has(e.name)) return true;
  if (e.$retryable?.throttling === true) return true;
  const status = e.$metadata?.httpStatusCode;
  return status !== undefined && (status === 429 || status >= 500);
}

/** No answer from the server at all (refused, reset, timed out): retry with back-off, but it is not throttling. */
export function isConnectionError(err: unknown): boolean {
  const e = shape(err);
  if (!e) return false;
  if (e.$metadata?.httpStatusCode !== undefined) return false; // the server answered
  return CONNECTION_CODES.has(e.code ?? '') || CONNECTION_CODES.has(e.name ?? '');
}

/**
 * DynamoDB errors that mean "try again" rather than "this request is wrong": throttling, conflicts, no connection,
 * or an error the SDK itself marks `$retryable`.
 */
export function isDynamoThrottleOrTransient(err: unknown): boolean {
  const e = shape(err);
  if (!e) return false;
  return (
    isDynamoThrottle(err) ||
    e.$retryable !== undefined ||
    (e.name !== undefined && CONFLICT_NAMES.has(e.name)) ||
    isConnectionError(err)
  );
}

/**
 * The retry decision for a DynamoDB call and for our own errors: a TtlstreamError says so itself (`retryable`, e.g.
 * RetryableError, KafkaRequestTimedOut); anything else is retried when it is a DynamoDB throttle, conflict, lost
 * connection or SDK-`$retryable` error.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof TtlstreamError) return err.retryable;
  return isDynamoThrottleOrTransient(err);
}

type Handler = (args: unknown) => Promise<unknown>;

/** The part of an AWS SDK v3 middleware stack this needs (structural, so no SDK types are imported here). */
interface RelativeAdder {
  addRelativeTo(
    middleware: (next: Handler) => Handler,
    options: { relation: 'after'; toMiddleware: string; name: string; override: boolean },
  ): void;
}

/**
 * Call `onThrottle` for every attempt of `command` that the server throttled, including attempts the SDK retried
 * on its own (which a caller otherwise only sees as `$metadata.attempts > 1`, indistinguishable from retries after
 * a refused connection). Returns the command.
 */
export function watchThrottling<
  C extends { middlewareStack: { addRelativeTo: (...args: never[]) => unknown } },
>(command: C, onThrottle: (err: unknown) => void): C {
  (command.middlewareStack as unknown as RelativeAdder).addRelativeTo(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        if (isDynamoThrottle(err)) onThrottle(err);
        throw err;
      }
    },
    { relation: 'after', toMiddleware: 'retryMiddleware', name: 'ttlstreamWatchThrottling', override: true },
  );
  return command;
}
