export { purgeArchive, type PurgeOptions, type PurgeResult, type PurgeCandidate } from './purge';
export {
  DAY_MS,
  effectiveRetentionDays,
  fileDueForPurge,
  lifecycleConfiguration,
  retentionCutoffMs,
} from './policy';
