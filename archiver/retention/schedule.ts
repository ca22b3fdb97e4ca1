import { hostname } from 'node:os';
import type { TtlstreamConfig } from '../../core/config';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { controlTableSettings } from '../control-settings';
import type { ArchiveStorage } from '../storage/types';
import { purgeArchive } from './purge';
import { retentionResolver } from './resolve';

export interface PurgeScheduleDeps {
  storage: ArchiveStorage;
  logger: Logger;
  intervalMs: number;
  retentionDays: (table: string) => Promise<number | null>;
  actor: string;
}

/**
 * The archiver's retention schedule: a purge every intervalMs (the first one an interval after
 * start, so a restart loop does not hammer the archive). Every archiver member runs it; purges are
 * idempotent (two members removing the same file both find it gone or remove it once). A failed
 * run is logged and tried again at the next interval.
 */
export function startPurgeSchedule(deps: PurgeScheduleDeps): { stop(): Promise<void> } {
  const abort = new AbortController();
  let running: Promise<void> | null = null;
  const run = async (): Promise<void> => {
    try {
      const result = await purgeArchive(deps.storage, {
        retentionDays: deps.retentionDays,
        actor: deps.actor,
        signal: abort.signal,
      });
      metrics.archivePurgedFiles.inc({ sink: deps.storage.kind }, result.files.length);
      if (result.files.length > 0)
        deps.logger.info(
          { files: result.files.length, rows: result.rows, bytes: result.bytes },
          'archive files past their retention removed',
        );
    } catch (err) {
      metrics.archivePurgeErrors.inc({ sink: deps.storage.kind });
      deps.logger.error({ err }, 'archive retention purge failed; retried at the next interval');
    }
  };
  const timer = setInterval(() => {
    if (!running) running = run().finally(() => (running = null));
  }, deps.intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      abort.abort();
      await running;
    },
  };
}

/**
 * The schedule an archiver process runs from its configuration: archive.retentionDays, with each
 * table's TTL settings override read from the control table (a DynamoDB client made at the first
 * purge that needs one, not at start: most archiver members never purge anything).
 */
export function startConfiguredPurgeSchedule(
  config: TtlstreamConfig,
  storage: ArchiveStorage,
  logger: Logger,
): { stop(): Promise<void> } | null {
  if (config.archive.purgeIntervalMs === 0) return null;
  const settings = controlTableSettings(config);
  const schedule = startPurgeSchedule({
    storage,
    logger: logger.child({ role: 'archive-purge' }),
    intervalMs: config.archive.purgeIntervalMs,
    retentionDays: retentionResolver(config.archive.retentionDays, settings.source),
    actor: `archiver:${hostname()}:${process.pid}`,
  });
  return {
    stop: async () => {
      await schedule.stop();
      settings.destroy();
    },
  };
}
