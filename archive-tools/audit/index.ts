export { auditKey } from './keys';
export { readDeletions, type DeletionReadOptions } from './deletions';
export {
  AUDIT_COLUMNS,
  AuditTally,
  auditRecord,
  classifyDeletion,
  classifyPresent,
  droppedSettingsNote,
  droppedTableNote,
  percentile,
  type ArchivedDeletion,
  type AuditCounts,
  type AuditRecord,
  type AuditRow,
  type AuditStatus,
  type AuditSummary,
  type DroppedTable,
  type LagStats,
  type PresentItem,
} from './report';
export { lossesInScope, type AuditLoss } from './losses';
