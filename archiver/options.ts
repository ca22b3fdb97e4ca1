import type { ArchiveSettings, TopicsSettings } from '../core/config';
import type { DeadLetterTopic } from './group/admin';
import type { ConsumerOptions } from './group/consumer';
import { withDefaults, type ArchiverTuning } from './group/defaults';
import type { MonitorOptions } from './group/monitor';
import type { RecoveryOptions } from './group/recovery';
import type { CompactionOptions } from './schedules/compaction';
import type { PurgeOptions } from './schedules/purge';

export type { ArchiverTuning } from './group/defaults';

/** What the archiver reads of the configuration (a whole configuration is one): its section and the topics. */
export interface ArchiverInput {
  archive: Pick<
    ArchiveSettings,
    | 'groupId'
    | 'rollBytes'
    | 'rollMs'
    | 'format'
    | 'parquetZstdLevel'
    | 'avroDeflateLevel'
    | 'lagAlertMs'
    | 'retentionDays'
    | 'purgeIntervalMs'
    | 'compactIntervalMs'
    | 'compactAfterMs'
    | 'compactTargetBytes'
    | 'compactMaxRows'
    | 'monitorIntervalMs'
    | 'sessionTimeoutMs'
    | 'rebalanceTimeoutMs'
  >;
  topics: TopicsSettings;
}

/**
 * The archiver's options, resolved once at start-up (`archiverOptionsFrom`) by whoever starts it, for every way of
 * starting it (its own entry point, `ttlstream run --roles archiver`). Each part takes its own slice: the consumer
 * ConsumerOptions, recovery RecoveryOptions, the monitor MonitorOptions, the purge schedule PurgeOptions, the
 * compaction schedule CompactionOptions.
 */
export interface ArchiverOptions
  extends ConsumerOptions, RecoveryOptions, MonitorOptions, PurgeOptions, CompactionOptions {
  /** How often watermarks are read for the lag, age and loss checks. */
  monitorIntervalMs: number;
  /** How often the topic list is read to pick up new per-table topics. */
  topicRefreshMs: number;
  /** Where poison records go, created at start if missing (`topics.*`). */
  deadLetterTopic: DeadLetterTopic;
}

/** `config`'s slice, with `tuning` (tests, the benchmark) over it and defaults for what neither sets. */
export function archiverOptionsFrom(config: ArchiverInput, tuning: ArchiverTuning = {}): ArchiverOptions {
  const { archive, topics } = config;
  return {
    ...withDefaults({ ...tuningOf(archive), ...tuning }),
    groupId: archive.groupId,
    streamTopics: {
      shared: topics.shared,
      perTablePrefix: topics.perTablePrefix,
      deadLetter: topics.deadLetter,
    },
    deadLetterTopic: {
      deadLetter: topics.deadLetter,
      partitions: topics.partitions,
      replicationFactor: topics.replicationFactor,
      minInsyncReplicas: topics.minInsyncReplicas,
    },
    rollBytes: archive.rollBytes,
    rollMs: archive.rollMs,
    format: archive.format,
    parquetZstdLevel: archive.parquetZstdLevel,
    avroDeflateLevel: archive.avroDeflateLevel,
    lagAlertMs: archive.lagAlertMs,
    purgeIntervalMs: archive.purgeIntervalMs,
    retentionDays: archive.retentionDays,
    compactIntervalMs: archive.compactIntervalMs,
    compactAfterMs: archive.compactAfterMs,
    compactTargetBytes: archive.compactTargetBytes,
    compactMaxRows: archive.compactMaxRows,
  };
}

/** The tuning knobs the configuration sets (`archive.*`); unset ones keep the archiver's defaults. */
function tuningOf(archive: ArchiverInput['archive']): ArchiverTuning {
  const { monitorIntervalMs, sessionTimeoutMs, rebalanceTimeoutMs } = archive;
  return {
    ...(monitorIntervalMs ? { monitorIntervalMs, topicRefreshMs: monitorIntervalMs } : {}),
    // Heartbeats well inside the session, as Kafka recommends (a third or less); short sessions move a killed
    // member's partitions quickly.
    ...(sessionTimeoutMs
      ? { sessionTimeoutMs, heartbeatIntervalMs: Math.max(500, Math.floor(sessionTimeoutMs / 5)) }
      : {}),
    ...(rebalanceTimeoutMs ? { rebalanceTimeoutMs } : {}),
  };
}
