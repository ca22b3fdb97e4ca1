export { compactArchive, type CompactOptions, type CompactResult, type PlannedUnit } from './compact';
export { compactHour, type UnitResult } from './unit';
