import { ConfigResourceTypes, ConfigSource, type Admin, type ITopicConfig } from 'kafkajs';
import type { TtlstreamConfig } from './config';
import { ConfigError, ServiceError, TimedOutError, ValidationError } from './errors';
import { withRetry } from './retry';

/**
 * The Kafka topics ttlstream needs, declared in code so that every deployment gets the same
 * retention and durability settings, and `applyTopics` can converge a cluster to them.
 */
export interface TopicSpec {
  topic: string;
  numPartitions: number;
  replicationFactor: number;
  configEntries: Array<{ name: string; value: string }>;
}

/** Poison records are kept long enough for a human to look at them after a weekend. */
export const DEAD_LETTER_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * A replica out of sync never becomes leader, whatever the cluster's default (Amazon MSK's default configuration turns
 * unclean election on): with it, a broker that missed acknowledged records could lead and drop REMOVE records whose
 * items are already deleted. A partition without an in-sync replica waits instead.
 */
export const NO_UNCLEAN_LEADER_ELECTION = { name: 'unclean.leader.election.enable', value: 'false' } as const;

const MAX_TOPIC_NAME = 249;
const LEGAL_TOPIC_NAME = /^[a-zA-Z0-9._-]+$/;

/** Kafka's own rule: a topic name it would accept. */
export function validateTopicName(name: string): void {
  if (name.length === 0 || name.length > MAX_TOPIC_NAME) {
    throw new ValidationError(
      `topic name "${name}" must be 1 to ${MAX_TOPIC_NAME} characters (it has ${name.length})`,
    );
  }
  if (name === '.' || name === '..') throw new ValidationError(`topic name "${name}" is not allowed`);
  if (!LEGAL_TOPIC_NAME.test(name)) {
    throw new ValidationError(
      `topic name "${name}" may contain only ASCII letters, digits, '.', '_' and '-'`,
    );
  }
}

/** The stream topic a table's REMOVE records go to, per `config.topics.naming`. */
export function streamTopicFor(config: Pick<TtlstreamConfig, 'topics'>, table: string): string {
  const t = config.topics;
  const topic = t.naming === 'shared' ? t.shared : `${t.perTablePrefix}${table}`;
  validateTopicName(topic);
  return topic;
}

/**
 * Kafka refuses two topics whose names differ only by '.' versus '_' (their metric names
 * collide); catching it here gives an error naming both instead of a failure half-way through.
 */
function collisionKey(topic: string): string {
  return topic.replace(/\./g, '_');
}

export function declaredTopics(config: Pick<TtlstreamConfig, 'topics'>, tables: string[] = []): TopicSpec[] {
  const t = config.topics;
  if (t.minInsyncReplicas > t.replicationFactor) {
    throw new ConfigError(
      `topics.minInsyncReplicas (TTLSTREAM_TOPICS_MIN_INSYNC_REPLICAS) = ${t.minInsyncReplicas} exceeds ` +
        `topics.replicationFactor (TTLSTREAM_TOPICS_REPLICATION_FACTOR) = ${t.replicationFactor}: no write could ever succeed`,
    );
  }
  const durability = (retentionMs: number): TopicSpec['configEntries'] => [
    { name: 'cleanup.policy', value: 'delete' },
    { name: 'retention.ms', value: String(retentionMs) },
    { name: 'min.insync.replicas', value: String(t.minInsyncReplicas) },
    { ...NO_UNCLEAN_LEADER_ELECTION },
  ];
  const spec = (topic: string, retentionMs: number): TopicSpec => {
    validateTopicName(topic);
    return {
      topic,
      numPartitions: t.partitions,
      replicationFactor: t.replicationFactor,
      configEntries: durability(retentionMs),
    };
  };

  const streamTopics =
    t.naming === 'shared' ? [t.shared] : [...new Set(tables)].map((table) => `${t.perTablePrefix}${table}`);
  const specs = [
    ...streamTopics.map((topic) => spec(topic, t.retentionMs)),
    spec(t.deadLetter, DEAD_LETTER_RETENTION_MS),
  ];

  const seen = new Map<string, string>();
  for (const { topic } of specs) {
    const other = seen.get(collisionKey(topic));
    if (other !== undefined) {
      throw new ValidationError(
        other === topic
          ? `topic "${topic}" is declared twice (is topics.deadLetter the same as a stream topic?)`
          : `topics "${other}" and "${topic}" collide in Kafka ('.' and '_' are interchangeable in its metric names)`,
      );
    }
    seen.set(collisionKey(topic), topic);
  }
  return specs;
}

export interface ApplyTopicsResult {
  created: string[];
  /** Existing topics whose declared settings had to be changed. */
  altered: string[];
  unchanged: string[];
  /**
   * Existing topics with another partition count than declared. Not changed automatically: adding
   * partitions moves keys to other partitions and breaks per-item ordering while both are in use.
   */
  partitionMismatches: Array<{ topic: string; declared: number; actual: number }>;
}

const TOPIC_VISIBLE_WITHIN_MS = 15_000;
/** Asked again soon at first (the broker usually learns of the topic within a few metadata rounds), then each second. */
const TOPIC_KNOWN_BACKOFF = { initialDelayMs: 50, maxDelayMs: 1000 };
const isUnknownTopic = (err: unknown): boolean =>
  (err as { type?: unknown } | null)?.type === 'UNKNOWN_TOPIC_OR_PARTITION';

/**
 * A topic another process has just created is known to the controller before every broker's
 * metadata cache has it; kafkajs then fails describe/alter with UNKNOWN_TOPIC_OR_PARTITION
 * instead of retrying. Wait for it to appear, within a bound.
 */
async function onceTopicKnown<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await withRetry(call, {
      retries: Infinity,
      ...TOPIC_KNOWN_BACKOFF,
      isRetryable: isUnknownTopic,
      signal: AbortSignal.timeout(TOPIC_VISIBLE_WITHIN_MS),
    });
  } catch (err) {
    if (!isUnknownTopic(err)) throw err;
    throw new TimedOutError(`${what}: topic still unknown after ${TOPIC_VISIBLE_WITHIN_MS} ms`, {
      cause: err,
    });
  }
}

/**
 * CreateTopics for one topic, waiting for its leaders; false if it already existed. On a busy broker the leader wait
 * can read metadata that does not know the new topic yet, and kafkajs gives up on that error instead of retrying:
 * the topic was created, so wait until the broker knows it.
 */
export async function createTopic(admin: Admin, topic: ITopicConfig): Promise<boolean> {
  try {
    return await admin.createTopics({ topics: [topic], waitForLeaders: true });
  } catch (err) {
    if (!isUnknownTopic(err)) throw err;
    await onceTopicKnown(`fetchTopicMetadata(${topic.topic})`, () =>
      admin.fetchTopicMetadata({ topics: [topic.topic] }),
    );
    return true;
  }
}

/**
 * Create the missing topics and bring the declared settings of existing ones to the declared
 * values. Idempotent, and safe when several processes race to create the same topic.
 */
export async function applyTopics(admin: Admin, specs: TopicSpec[]): Promise<ApplyTopicsResult> {
  const result: ApplyTopicsResult = { created: [], altered: [], unchanged: [], partitionMismatches: [] };
  const existing = new Set(await admin.listTopics());
  const toCheck: TopicSpec[] = [];
  for (const spec of specs) {
    if (existing.has(spec.topic)) {
      toCheck.push(spec);
      continue;
    }
    const topic: ITopicConfig = { ...spec, configEntries: spec.configEntries.map((e) => ({ ...e })) };
    // false: another process created it between listTopics and here; converge its settings instead.
    const created = await createTopic(admin, topic);
    if (created) result.created.push(spec.topic);
    else toCheck.push(spec);
  }
  if (toCheck.length === 0) return result;

  const names = toCheck.map((s) => s.topic);
  const described = await onceTopicKnown(`describeConfigs(${names.join(', ')})`, () =>
    admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
    }),
  );
  const metadata = await onceTopicKnown(`fetchTopicMetadata(${names.join(', ')})`, () =>
    admin.fetchTopicMetadata({ topics: names }),
  );

  for (const spec of toCheck) {
    const resource = described.resources.find((r) => r.resourceName === spec.topic);
    if (!resource || resource.errorCode !== 0) {
      throw new ServiceError(
        `describeConfigs for topic ${spec.topic} failed: ${resource?.errorMessage ?? 'no answer'}`,
      );
    }
    const current = new Map(resource.configEntries.map((e) => [e.configName, e]));
    const drift = spec.configEntries.filter((want) => current.get(want.name)?.configValue !== want.value);
    if (drift.length === 0) {
      result.unchanged.push(spec.topic);
    } else {
      // kafkajs speaks the legacy AlterConfigs, which replaces the topic's whole override set:
      // resend the overrides already there so that settings we do not declare are kept.
      const overrides = new Map(
        resource.configEntries
          .filter((e) => e.configSource === ConfigSource.TOPIC_CONFIG && !e.readOnly && !e.isSensitive)
          .map((e) => [e.configName, e.configValue]),
      );
      for (const want of spec.configEntries) overrides.set(want.name, want.value);
      await onceTopicKnown(`alterConfigs(${spec.topic})`, () =>
        admin.alterConfigs({
          validateOnly: false,
          resources: [
            {
              type: ConfigResourceTypes.TOPIC,
              name: spec.topic,
              configEntries: [...overrides].map(([name, value]) => ({ name, value })),
            },
          ],
        }),
      );
      result.altered.push(spec.topic);
    }
    const actual = metadata.topics.find((m) => m.name === spec.topic)?.partitions.length ?? 0;
    if (actual !== spec.numPartitions)
      result.partitionMismatches.push({ topic: spec.topic, declared: spec.numPartitions, actual });
  }
  return result;
}

/** A declared topic as the broker has it: what `topics describe` shows and `topics apply --dry-run` plans from. */
export interface TopicState {
  spec: TopicSpec;
  exists: boolean;
  /** The broker's numbers (undefined when the topic does not exist). */
  partitions?: number;
  /** The smallest replica count over the topic's partitions: what its durability rests on. */
  replicationFactor?: number;
  /** Declared settings whose value on the broker differs (or is missing). */
  drift: Array<{ name: string; declared: string; actual: string | null }>;
}

/** Reads the declared topics' real partition counts, replication factors and settings; changes nothing. */
export async function inspectTopics(admin: Admin, specs: TopicSpec[]): Promise<TopicState[]> {
  const existing = new Set(await admin.listTopics());
  const names = specs.map((s) => s.topic).filter((t) => existing.has(t));
  const described =
    names.length === 0
      ? { resources: [] }
      : await admin.describeConfigs({
          includeSynonyms: false,
          resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
        });
  const metadata = names.length === 0 ? { topics: [] } : await admin.fetchTopicMetadata({ topics: names });
  return specs.map((spec) => {
    if (!existing.has(spec.topic)) return { spec, exists: false, drift: [] };
    const partitions = metadata.topics.find((m) => m.name === spec.topic)?.partitions ?? [];
    const current = new Map(
      (described.resources.find((r) => r.resourceName === spec.topic)?.configEntries ?? []).map((e) => [
        e.configName,
        e.configValue,
      ]),
    );
    return {
      spec,
      exists: true,
      partitions: partitions.length,
      replicationFactor: partitions.length === 0 ? 0 : Math.min(...partitions.map((p) => p.replicas.length)),
      drift: spec.configEntries
        .filter((want) => current.get(want.name) !== want.value)
        .map((want) => ({ name: want.name, declared: want.value, actual: current.get(want.name) ?? null })),
    };
  });
}
