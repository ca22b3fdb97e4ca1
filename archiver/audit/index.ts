export { auditKey } from './keys';
export { readDeletions, type DeletionReadOptions } from './deletions';
export {
  AUDIT_COLUMNS,
  AuditTally,
  auditRecord,
  classifyDeletion,
  classifyPresent,
  percentile,
  type ArchivedDeletion,
  type AuditCounts,
  type AuditRecord,
  type AuditRow,
  type AuditStatus,
  type AuditSummary,
  type LagStats,
  type PresentItem,
} from './report';
