import type { TtlstreamConfig } from '../core/config';
import type { GuardLimits } from '../pipeline/guard';

/**
 * The scanner's slice of the configuration: its own knobs (`scanner.*`), the internal tables it reads and writes,
 * the shape of the marks the producer takes, and the mass-deletion guard's limits. Taken once at the scanner's
 * start (`scannerOptionsFrom`), so nothing below it depends on the rest of the configuration.
 */
export interface ScannerOptions extends Readonly<TtlstreamConfig['scanner']> {
  /** `tables.control`: segment and index-shard leases, sweep and backfill progress, the guard. */
  controlTable: string;
  /** `tables.marks`: where the marks go. */
  marksTable: string;
  /** `producer.shards`: a mark's shard is the producer's. */
  markShards: number;
  /** `producer.batchSize`: a mark row holds at most one producer batch. */
  marksPerRow: number;
  guard: GuardLimits;
}

export function scannerOptionsFrom(config: TtlstreamConfig): ScannerOptions {
  return {
    ...config.scanner,
    controlTable: config.tables.control,
    marksTable: config.tables.marks,
    markShards: config.producer.shards,
    marksPerRow: config.producer.batchSize,
    guard: config.guard,
  };
}
