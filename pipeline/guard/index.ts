/**
 * The mass-deletion guard shared by the scanner (which pauses and re-arms), the producer (which pauses on the deletion
 * rate and stops deleting while paused) and the operators (./actions.ts): its pure verdicts, its store, and the
 * gauge that reports the stored state (./gauge.ts).
 */
export * from './decision';
export { GuardStore, type GuardRecord } from './store';
export { GuardGauge, type GuardRows } from './gauge';
