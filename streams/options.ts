import type { SchemasSettings, StreamsSettings, TablesSettings, TopicsSettings } from '../core/config';
import type { RegistrySettings } from '../core/schema-registry';

/** What the streams role reads of the configuration (a whole configuration is one). */
export interface StreamsInput {
  streams: StreamsSettings;
  region: string;
  tables: Pick<TablesSettings, 'control'>;
  topics: TopicsSettings;
  schemas: SchemasSettings;
}

/**
 * The streams role's options, resolved once at start-up (`streamsOptionsFrom`): its own knobs (`streams.*`) and what
 * it needs of the other sections, so nothing below it depends on the rest of the configuration.
 */
export interface StreamsOptions extends Readonly<Omit<StreamsSettings, 'endpoint'>> {
  /** `tables.control`: the followed tables' settings, shard leases and checkpoints. */
  controlTable: string;
  /** What the records are published as: the region of their ARNs, and the topics (as the deleter's records). */
  stream: { region: string; topics: TopicsSettings };
  /** `schemas.registry`: set, records go out in the Confluent wire format, as the deleter's (decision 0025). */
  schemaRegistry: RegistrySettings | undefined;
}

export function streamsOptionsFrom(config: StreamsInput): StreamsOptions {
  const { endpoint: _endpoint, ...own } = config.streams;
  return {
    ...own,
    controlTable: config.tables.control,
    stream: { region: config.region, topics: config.topics },
    schemaRegistry: config.schemas.registry,
  };
}
