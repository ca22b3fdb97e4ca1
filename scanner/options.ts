import type { ProducerSettings, ScannerSettings, TablesSettings } from '../core/config';
import type { GuardLimits } from '../pipeline/guard';

/**
 * What the scanner reads of the configuration (a whole configuration is one): its own section, the internal tables, the
 * shape of the marks the producer takes and the mass-deletion guard's limits.
 */
export interface ScannerInput {
  scanner: ScannerSettings;
  tables: Pick<TablesSettings, 'control' | 'marks'>;
  producer: Pick<ProducerSettings, 'shards' | 'batchSize'>;
  guard: GuardLimits;
}

/**
 * The scanner's options, resolved once at start-up (`scannerOptionsFrom`) by whoever starts it: its own knobs
 * (`scanner.*`) and what it needs of the other sections, so nothing below it depends on the rest of the
 * configuration.
 */
export interface ScannerOptions extends Readonly<ScannerSettings> {
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

export function scannerOptionsFrom(config: ScannerInput): ScannerOptions {
  return {
    ...config.scanner,
    controlTable: config.tables.control,
    marksTable: config.tables.marks,
    markShards: config.producer.shards,
    marksPerRow: config.producer.batchSize,
    guard: {
      maxExpiredFraction: config.guard.maxExpiredFraction,
      minItemsForFraction: config.guard.minItemsForFraction,
      maxDeletesPerMinute: config.guard.maxDeletesPerMinute,
    },
  };
}
