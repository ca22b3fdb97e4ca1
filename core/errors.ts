import { ERROR_CODES, type ErrorCode } from './error-codes';

/**
 * The root of every error ttlstream throws, so callers branch on class (or on `code`), not on message text. Each
 * class names a stable `code` from core/error-codes.ts (documented in docs/errors.md); `retryable` says whether the
 * same operation may succeed if tried again (core/retry.ts reads it), and defaults to what the code says.
 */
export class TtlstreamError extends Error {
  static readonly code: ErrorCode = 'TTLSTREAM_ERROR';
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options && 'cause' in options ? { cause: options.cause } : undefined);
    this.name = new.target.name;
    this.code = new.target.code;
    this.retryable = options?.retryable ?? ERROR_CODES[this.code].retryable;
  }
}

/** A setting is missing or wrong; the message names it. Fatal at start-up. */
export class ConfigError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_CONFIG';
}

/** The caller asked for something invalid (bad body, bad parameter); maps to HTTP 400. */
export class ValidationError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_VALIDATION';
}

/** The named resource (table, settings) does not exist; maps to HTTP 404. */
export class NotFoundError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_NOT_FOUND';
}

/** The request conflicts with the current state (a TTL change in progress); maps to HTTP 409/400. */
export class ConflictError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_CONFLICT';
}

/** A transient failure worth retrying (throttling, 5xx, broker unavailable): `retryable` is true. */
export class RetryableError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_RETRYABLE';
}

/** A wait with a deadline gave up (a table not ACTIVE, a topic not yet visible). */
export class TimedOutError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_TIMEOUT';
}

/** A service could not be reached, refused the request, or is not what the configuration says it is. */
export class ServiceError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_SERVICE';
}

/** A lease this process relied on was lost to another process; stop the work it guarded. */
export class LeaseLostError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_LEASE_LOST';
}

/** A component was used before it started or after it stopped (a shutdown racing with work). */
export class NotRunningError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_NOT_RUNNING';
}

/** Stored or fetched data is not in the form ttlstream writes or expects (a corrupt row, file or page). */
export class DataError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_DATA';
}

/** An internal invariant does not hold: a bug, never the caller's fault. */
export class InternalError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_INTERNAL';
}
