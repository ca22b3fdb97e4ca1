export { purgeArchive, type PurgeOptions, type PurgeResult, type PurgeCandidate } from './purge';
