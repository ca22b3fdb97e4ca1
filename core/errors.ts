/** Error classes shared by every component, so callers branch on class, not on message text. */
export class TtlstreamError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A setting is missing or wrong; the message names it. Fatal at start-up. */
export class ConfigError extends TtlstreamError {}

/** The caller asked for something invalid (bad body, bad parameter); maps to HTTP 400. */
export class ValidationError extends TtlstreamError {}

/** The named resource (table, settings) does not exist; maps to HTTP 404. */
export class NotFoundError extends TtlstreamError {}

/** The request conflicts with the current state (a TTL change in progress); maps to HTTP 409/400. */
export class ConflictError extends TtlstreamError {}

/** A transient failure worth retrying (throttling, 5xx, broker unavailable). */
export class RetryableError extends TtlstreamError {}

/** A lease this process relied on was lost to another process; stop the work it guarded. */
export class LeaseLostError extends TtlstreamError {}
