import { Archiver, type ArchiverDeps } from './archiver';
import { startCompactSchedule } from './schedules/compaction';
import { startConfiguredPurgeSchedule } from './schedules/purge';
import { labelledSettings } from './ttl-settings';

export { Archiver, streamTopicFilter, type ArchiverDeps } from './archiver';
export {
  archiverOptionsFrom,
  type ArchiverInput,
  type ArchiverOptions,
  type ArchiverTuning,
} from './options';
export { DLQ_HEADERS, REPLAY_HEADER, deadLetterMessage, isReplayed } from './dead-letter';
export { writeRoll, RollCancelledError } from './writer';
export { RecentIds } from './dedup';

export interface RunningArchiver {
  /** Graceful: stop fetching, roll and write what is buffered, commit, leave the group. */
  stop(): Promise<void>;
  /** Run the watermark check (lag, age, loss) now rather than at the next interval. */
  monitor(): Promise<void>;
}

/**
 * Start an archiver process member: a kafkajs consumer group over the stream topics writing
 * Avro container files, key indexes and manifests to `deps.storage`. Any number of members share
 * the partitions. Resolves once connected and subscribed (or waiting for the first stream topic).
 */
export async function startArchiver(given: ArchiverDeps): Promise<RunningArchiver> {
  const deps = { ...given, settings: labelledSettings(given.settings) };
  const archiver = new Archiver(deps);
  try {
    await archiver.start();
  } catch (err) {
    await archiver.stop().catch(() => undefined);
    throw err;
  }
  const purge = startConfiguredPurgeSchedule(deps.options, deps.settings, deps.storage, deps.logger);
  const compact = startCompactSchedule(deps.options, deps.settings, deps.storage, deps.logger);
  return {
    stop: async () => {
      await compact?.stop();
      await purge?.stop();
      await archiver.stop();
    },
    monitor: () => archiver.monitor(),
  };
}
