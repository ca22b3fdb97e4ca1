/**
 * ttlstream's public API for other teams and for embedding. The CLI (`ttlstream`, cli/main.ts) is
 * built on these same exports.
 *
 * - The stream record contract (docs/stream-contract.md): zod schemas, encoders/decoders, Avro types.
 * - `consumeTtlStream`: a typed Kafka consumer of the REMOVE stream.
 * - The TTL policy engine and the helpers for application code (read filter, last-write stamp).
 * - Configuration and error classes.
 */

// The record contract.
export * from './schemas';

// Consuming the stream.
export {
  consumeTtlStream,
  DEFAULT_STREAM_TOPIC,
  DedupeWindow,
  type ConsumeTtlStreamOptions,
  type TtlStreamConsumer,
  type RecordMeta,
  type PoisonMeta,
} from './consumer';

// The policy engine and application helpers (pure, no I/O except the SDK middleware).
export {
  evaluate,
  isExpired,
  stillExpiredCondition,
  relevantAttributes,
  notExpiredFilter,
  filterUnexpired,
  lastWriteStampMiddleware,
  addLastWriteStamp,
  TableTtlSettingsSchema,
  TtlPolicySchema,
  DynamoTtlSchema,
  CosmosTtlSchema,
  MongoTtlSchema,
  TtlStatusSchema,
  type TableTtlSettings,
  type TtlPolicy,
  type TtlStatus,
  type DynamoTtl,
  type CosmosTtl,
  type MongoTtl,
  type Item,
  type Evaluation,
  type IgnoredReason,
  type ConditionParts,
  type LastWriteStampOptions,
} from './policy';

// Configuration and errors.
export { loadConfig, parseConfig, ConfigSchema, type TtlstreamConfig, type ConfigInput } from './core/config';
export {
  TtlstreamError,
  ConfigError,
  ValidationError,
  NotFoundError,
  ConflictError,
  RetryableError,
  TimedOutError,
  ServiceError,
  LeaseLostError,
  NotRunningError,
  DataError,
  InternalError,
} from './core/errors';
export { ERROR_CODES, type ErrorCode, type ErrorCodeInfo } from './core/error-codes';

// TTL settings as the control plane stores them (for tools that enable TTL without the HTTP API).
export { TtlSettingsStore, type TtlDescription } from './control/settings-store';
