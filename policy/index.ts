/** ttlstream's TTL policy engine (pure) and the helpers for application code. See policy/README.md. */
export * from './settings';
export * from './types';
export { evaluate, isExpired } from './evaluate';
export { stillExpiredCondition } from './condition';
export { relevantAttributes } from './projection';
export { notExpiredFilter, filterUnexpired } from './read-filter';
export {
  lastWriteStampMiddleware,
  addLastWriteStamp,
  lastWriteStampTables,
  stampRequest,
  LAST_WRITE_STAMP_MIDDLEWARE,
  type LastWriteStampOptions,
} from './write-stamp';
export {
  FIVE_YEARS_SECONDS,
  FIVE_YEARS_MS,
  LOOKS_LIKE_MILLIS_SECONDS,
  COSMOS_MAX_TTL_SECONDS,
} from './constants';
export { parseIso8601 } from './iso-8601';
export {
  EXPIRY_INDEX_NAME,
  EXPIRY_SHARD_ATTRIBUTE,
  EXPIRY_DERIVED_ATTRIBUTE,
  ExpiryIndexSettingsSchema,
  expirySortKey,
  expiryQueryRange,
  expiryWindowRange,
  expiryShardOf,
  expiryIndexProjection,
  expiryIndexDefinition,
  type ExpiryIndexSettings,
} from './expiry-index';
export { inTtlWindow, ttlInstantOf, presentVerdict, type TtlWindow, type PresentVerdict } from './window';
export { expiryStampTables, stampExpiryIndex, type ExpiryStampTable } from './expiry-stamp';
