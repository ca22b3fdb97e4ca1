import type { Kafka } from 'kafkajs';
import {
  archiverOptionsFrom,
  startArchiver,
  type ArchiverTuning,
  type RunningArchiver,
} from '../../archiver';
import type { ArchiveStorage } from '../../archive/storage';
import { settingsOnFirstRead } from '../../control/settings-store';
import type { TtlstreamConfig } from '../../core/config';
import type { Logger } from '../../core/logger';

/**
 * An archiver in this process, started as `ttlstream run --roles archiver` starts one: its options resolved from
 * `config` with the test's `tuning` over them, the tables' TTL settings read from the control table (its client made
 * at the first read and closed at the stop).
 */
export async function startArchiverFor(
  config: TtlstreamConfig,
  deps: { kafka: Kafka; storage: ArchiveStorage; logger: Logger; tuning?: ArchiverTuning },
): Promise<RunningArchiver> {
  const settings = settingsOnFirstRead(config);
  try {
    const archiver = await startArchiver({
      options: archiverOptionsFrom(config, deps.tuning),
      kafka: deps.kafka,
      storage: deps.storage,
      logger: deps.logger,
      settings,
    });
    return {
      monitor: () => archiver.monitor(),
      stop: async () => {
        try {
          await archiver.stop();
        } finally {
          settings.destroy();
        }
      },
    };
  } catch (err) {
    settings.destroy();
    throw err;
  }
}
