import { hostname } from 'node:os';
import { everyInterval, type IntervalJob } from '../../core/interval-job';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import type { ArchiveStorage } from '../../archive/storage/types';
import { purgeArchive } from '../../archive-tools/purge/purge';
import { retentionResolver, type SettingsSource } from '../../archive/retention/resolve';

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
export function startPurgeSchedule(deps: PurgeScheduleDeps): IntervalJob {
  return everyInterval(deps.intervalMs, async (signal) => {
    try {
      const result = await purgeArchive(deps.storage, {
        retentionDays: deps.retentionDays,
        actor: deps.actor,
        signal,
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
  });
}

/** The purge schedule's slice of the archiver's options (archiver/options.ts). */
export interface PurgeOptions {
  /** `archive.purgeIntervalMs`: 0 turns the schedule off. */
  purgeIntervalMs: number;
  /** `archive.retentionDays`: the default of every table; unset keeps the archive for ever. */
  retentionDays: number | undefined;
}

/**
 * The schedule an archiver process runs from its options: archive.retentionDays, with each table's TTL settings
 * override read from `settings` (the control table: the archiver's starter opens it at the first read, not at start,
 * since most archiver members never purge anything).
 */
export function startConfiguredPurgeSchedule(
  options: PurgeOptions,
  settings: SettingsSource,
  storage: ArchiveStorage,
  logger: Logger,
): { stop(): Promise<void> } | null {
  if (options.purgeIntervalMs === 0) return null;
  return startPurgeSchedule({
    storage,
    logger: logger.child({ role: 'archive-purge' }),
    intervalMs: options.purgeIntervalMs,
    retentionDays: retentionResolver(options.retentionDays, settings),
    actor: `archiver:${hostname()}:${process.pid}`,
  });
}
