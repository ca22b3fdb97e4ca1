import { setTimeout as sleep } from 'node:timers/promises';
import { TtlstreamError } from './errors';

/**
 * An exponential back-off: the wait before retry `attempt` (0 for the first) is at most
 * min(maxDelayMs, initialDelayMs × 2^attempt).
 */
export interface Backoff {
  initialDelayMs: number;
  maxDelayMs: number;
}

/**
 * The ceiling of the wait before retry `attempt` (0 for the first): min(maxDelayMs, initialDelayMs × 2^attempt).
 * Deterministic: the doubling interval of a poll (a doorbell, a backlog probe); a retry waits `backoffMs`.
 */
export function backoffCeilingMs(attempt: number, backoff: Backoff): number {
  // 2^52 × any delay is past every cap, and never Infinity (0 × Infinity would be NaN).
  return Math.min(backoff.maxDelayMs, backoff.initialDelayMs * 2 ** Math.min(Math.max(attempt, 0), 52));
}

/**
 * The wait before retry `attempt`, with full jitter: uniform between 0 and the ceiling, so callers that failed
 * together (every shard worker when DynamoDB restarts) do not retry together. The one back-off of the code base:
 * `npm run lint` refuses a hand-written `2 **` or `Math.pow` back-off outside core/ (eslint.config.mjs).
 */
export function backoffMs(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  return random() * backoffCeilingMs(attempt, backoff);
}

/**
 * The retry decision when a caller gives none: everything is retried except a TtlstreamError whose `retryable` is
 * false (a lost lease, a bad argument, a corrupt row: trying again cannot help).
 */
export function retryableByFlag(err: unknown): boolean {
  return !(err instanceof TtlstreamError && !err.retryable);
}

export interface RetryOptions extends Partial<Backoff> {
  /** Retries after the first attempt; `Infinity` retries until it succeeds, a non-retryable error or `signal`. */
  retries: number;
  /** Return false to stop retrying and rethrow at once (default: `retryableByFlag`). */
  isRetryable?: (err: unknown) => boolean;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Ends the retrying: aborted after a failure or during the wait, the failure is rethrown at once. */
  signal?: AbortSignal;
}

/** `fn` until it succeeds, with exponential back-off and full jitter (`backoffMs`): the one retry loop of the code base. */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const backoff = { initialDelayMs: options.initialDelayMs ?? 100, maxDelayMs: options.maxDelayMs ?? 10_000 };
  const retryable = options.isRetryable ?? retryableByFlag;
  const { signal } = options;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= options.retries || !retryable(err) || signal?.aborted) throw err;
      const delay = backoffMs(attempt, backoff);
      options.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, undefined, signal ? { signal } : undefined).catch(() => undefined);
      if (signal?.aborted) throw err;
    }
  }
}

/**
 * A signal that aborts once `done()` holds, looked at every `everyMs`: for a retry loop whose end is a state flag
 * (a partition given up, the archiver closing) rather than an event, so a wait ends within `everyMs` of it. Call
 * `stop` when the loop is over.
 */
export function abortWhen(done: () => boolean, everyMs = 500): { signal: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  const look = (): void => {
    if (!done()) return;
    controller.abort();
    clearInterval(timer);
  };
  const timer = setInterval(look, everyMs);
  timer.unref();
  look();
  return { signal: controller.signal, stop: () => clearInterval(timer) };
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
