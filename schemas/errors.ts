import { TtlstreamError } from '../core/errors';
import type { ErrorCode } from '../core/error-codes';

export const POISON_REASONS = [
  'missing-headers',
  'unknown-encoding',
  'unknown-schema',
  'undecodable',
  'schema-violation',
] as const;
export type PoisonReason = (typeof POISON_REASONS)[number];

/**
 * A stream message that cannot become a valid record. `reason` says which check failed, so the
 * archiver can dead-letter it and a consumer can skip it without stopping the partition:
 * - missing-headers: no kind or encoding header (or no fingerprint for Avro), or one given twice with different values
 * - unknown-encoding: the encoding header is neither avro nor json
 * - unknown-schema: unknown kind, or an Avro fingerprint matching no schema version of that kind
 * - undecodable: empty/null value, bytes that are not Avro of the writer schema, or not UTF-8 JSON
 * - schema-violation: decoded, but fails the zod contract (or disagrees with its headers)
 */
export class PoisonRecordError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_POISON_RECORD';
  constructor(
    readonly reason: PoisonReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${reason}: ${message}`, options);
  }
}
