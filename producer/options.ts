import type {
  GuardSettings,
  ProducerSettings,
  SchemasSettings,
  TablesSettings,
  TopicsSettings,
} from '../core/config';
import type { RegistrySettings } from '../core/schema-registry';
import type { GuardLimits } from '../pipeline/guard';
import type { StreamSettings } from '../pipeline/publisher';

/**
 * What the producer reads of the configuration (a whole configuration is one): its own section, the internal tables, the
 * mass-deletion guard and what its REMOVE records are made of.
 */
export interface ProducerInput {
  producer: ProducerSettings;
  tables: Pick<TablesSettings, 'control' | 'marks'>;
  guard: GuardSettings;
  region: string;
  topics: TopicsSettings;
  schemas: SchemasSettings;
}

/**
 * The producer's options, resolved once at start-up (`producerOptionsFrom`) by whoever starts it: its own knobs
 * (`producer.*`) and what it needs of the other sections, so nothing below it depends on the rest of the
 * configuration.
 */
export interface ProducerOptions extends Readonly<ProducerSettings> {
  /** `tables.control`: shard leases and the guard. */
  controlTable: string;
  /** `tables.marks`: the marks, journals and doorbells. */
  marksTable: string;
  guard: GuardLimits;
  /** `guard.gaugeRefreshMs`: how often the producer re-reads the guard rows for `ttlstream_guard_paused`. */
  guardGaugeRefreshMs: number;
  stream: StreamSettings;
  /** `schemas.registry`: set, the publisher writes the Confluent wire format (decision 0025). */
  schemaRegistry: RegistrySettings | undefined;
}

export function producerOptionsFrom(config: ProducerInput): ProducerOptions {
  return {
    ...config.producer,
    controlTable: config.tables.control,
    marksTable: config.tables.marks,
    guard: {
      maxExpiredFraction: config.guard.maxExpiredFraction,
      minItemsForFraction: config.guard.minItemsForFraction,
      maxDeletesPerMinute: config.guard.maxDeletesPerMinute,
    },
    guardGaugeRefreshMs: config.guard.gaugeRefreshMs,
    stream: { region: config.region, topics: config.topics },
    schemaRegistry: config.schemas.registry,
  };
}
