import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  retries: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Return false to stop retrying and rethrow at once. */
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
      if (attempt >= options.retries || !(options.isRetryable?.(err) ?? true) || options.signal?.aborted)
        throw err;
      const delay = Math.random() * Math.min(max, initial * 2 ** attempt);
      options.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, undefined, options.signal ? { signal: options.signal } : undefined);
    }
  }
}

const THROTTLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionConflictException',
]);

/** DynamoDB errors that mean "slow down and try again" rather than "this request is wrong". */
export function isDynamoThrottleOrTransient(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  if (e.name && THROTTLE_NAMES.has(e.name)) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  return ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'TimeoutError'].includes(
    e.code ?? e.name ?? '',
  );
}
