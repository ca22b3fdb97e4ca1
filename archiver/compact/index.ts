export { compactArchive, type CompactOptions, type CompactResult, type PlannedUnit } from './compact';
export { compactHour, type UnitResult } from './unit';
export { tryLock, waitForLock, lockIsHeld, LOCK_LEASE_MS, type HeldLock, type LockRecord } from './lock';
export { CompactionRecordSchema, type CompactionRecord, type ReplacedFile } from './records';
export { startCompactSchedule, type CompactionOptions } from './schedule';
