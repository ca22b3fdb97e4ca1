import type { TtlstreamConfig } from '../core/config';
import type { GuardLimits } from '../pipeline/guard';
import type { StreamSettings } from './publisher';

/**
 * The producer's slice of the configuration: its own knobs (`producer.*`), the internal tables it writes, the
 * mass-deletion guard's limits and what its REMOVE records are made of. Taken once at the producer's start
 * (`producerOptionsFrom`), so nothing below it depends on the rest of the configuration.
 */
export interface ProducerOptions extends Readonly<TtlstreamConfig['producer']> {
  /** `tables.control`: shard leases and the guard. */
  controlTable: string;
  /** `tables.marks`: the marks, journals and doorbells. */
  marksTable: string;
  guard: GuardLimits;
  /** `guard.gaugeRefreshMs`: how often the producer re-reads the guard rows for `ttlstream_guard_paused`. */
  guardGaugeRefreshMs: number;
  stream: StreamSettings;
}

export function producerOptionsFrom(config: TtlstreamConfig): ProducerOptions {
  return {
    ...config.producer,
    controlTable: config.tables.control,
    marksTable: config.tables.marks,
    guard: config.guard,
    guardGaugeRefreshMs: config.guard.gaugeRefreshMs,
    stream: { region: config.region, topics: config.topics },
  };
}
