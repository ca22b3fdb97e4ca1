import { hostname } from 'node:os';
import { everyInterval, type IntervalJob } from '../../core/interval-job';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { retentionResolver, type SettingsSource } from '../../archive/retention/resolve';
import type { DataFormat } from '../../archive/storage/layout';
import type { ArchiveStorage } from '../../archive/storage/types';
import { compactArchive, type CompactOptions } from '../../archive-tools/compact/compact';

/** The compaction schedule's slice of the archiver's options (archiver/options.ts). */
export interface CompactionOptions {
  /** `archive.compactIntervalMs`: 0 turns the schedule off. */
  compactIntervalMs: number;
  /** `archive.compactAfterMs`. */
  compactAfterMs: number;
  /** `archive.compactTargetBytes`. */
  compactTargetBytes: number;
  /** `archive.compactMaxRows`. */
  compactMaxRows: number;
  /** `archive.format`, `archive.parquetZstdLevel`, `archive.avroDeflateLevel`: how compacted files are written. */
  format: DataFormat;
  parquetZstdLevel: number;
  avroDeflateLevel: number;
  /** `archive.retentionDays`: hours about to be purged are left to the purge. */
  retentionDays: number | undefined;
}

/**
 * The archivers' compaction schedule (docs/decisions/0037): a run every compactIntervalMs (the first an interval
 * after start, so a restart loop does not hammer the archive). Every archiver process runs it; the tables' archive
 * locks make one process compact a table at a time, the others skip it (their runs still set the lag gauge from
 * their own listing). A failed run is logged and tried again at the next interval; a stop ends a run between hours.
 */
export function startCompactSchedule(
  options: CompactionOptions,
  settings: SettingsSource,
  storage: ArchiveStorage,
  logger: Logger,
): IntervalJob | null {
  if (options.compactIntervalMs === 0) return null;
  const log = logger.child({ role: 'archive-compact' });
  const sink = { sink: storage.kind };
  // Every series from the start, not from the first run an interval later: the panels have their lines, and a first
  // failure is an increase TtlstreamArchiveCompactionFailing sees (a series born at 1 shows none).
  for (const side of ['in', 'out']) {
    metrics.archiveCompactedFiles.inc({ ...sink, side }, 0);
    metrics.archiveCompactedBytes.inc({ ...sink, side }, 0);
  }
  metrics.archiveCompactionErrors.inc(sink, 0);
  const runOptions: Omit<CompactOptions, 'nowMs' | 'signal'> = {
    afterMs: options.compactAfterMs,
    targetBytes: options.compactTargetBytes,
    maxRows: options.compactMaxRows,
    format: options.format,
    levels: { zstdLevel: options.parquetZstdLevel, deflateLevel: options.avroDeflateLevel },
    retentionDays: retentionResolver(options.retentionDays, settings),
    actor: `archiver:${hostname()}:${process.pid}`,
  };
  return everyInterval(options.compactIntervalMs, async (signal) => {
    try {
      const r = await compactArchive(storage, { ...runOptions, signal });
      const due = r.oldestPendingMs === null ? null : r.oldestPendingMs + 3_600_000 + options.compactAfterMs;
      metrics.archiveCompactionLag.set(due === null ? 0 : Math.max(0, (Date.now() - due) / 1000));
      metrics.archiveCompactedFiles.inc({ ...sink, side: 'in' }, r.totals.inputs);
      metrics.archiveCompactedFiles.inc({ ...sink, side: 'out' }, r.totals.outputs);
      metrics.archiveCompactedBytes.inc({ ...sink, side: 'in' }, r.totals.bytesIn);
      metrics.archiveCompactedBytes.inc({ ...sink, side: 'out' }, r.totals.bytesOut);
      metrics.archiveCompactionErrors.inc(sink, r.failed.length);
      for (const f of r.failed)
        log.error(
          { table: f.table, hour: f.hour, err: f.error },
          'compaction of an hour failed; tried again at the next run',
        );
      if (r.units.length > 0 || r.days.length > 0)
        log.info(
          { hours: r.units.length, days: r.days.length, ...r.totals, busy: r.busy.map((b) => b.table) },
          'archive hours compacted',
        );
    } catch (err) {
      metrics.archiveCompactionErrors.inc(sink);
      log.error({ err }, 'archive compaction failed; tried again at the next interval');
    } finally {
      metrics.archiveCompactionLastRun.set(Date.now() / 1000);
    }
  });
}
