import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { RecentIds } from '../dedup';
import {
  ArchiveLineageError,
  claimBeyondTopic,
  readPartitionHistory,
  recentDedupKeys,
  type ManifestEntry,
} from '../history';
import type { TtlSettingsOf } from '../ttl-settings';
import type { LossReporter } from '../loss';
import { PartitionWorker } from '../partition';
import { indexPathFor, type DataFormat } from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';
import type { AdminClient } from './admin';
import type { OffsetManager } from './offsets';
import type { GroupState, Slot } from './state';

/** Recovery's slice of the archiver's options (archiver/options.ts): what a partition's worker is made with. */
export interface RecoveryOptions {
  /** `archive.rollBytes`. */
  rollBytes: number;
  /** `archive.rollMs`. */
  rollMs: number;
  /** `archive.format`: the format of the data files new rolls write. */
  format: DataFormat;
  /** `archive.parquetZstdLevel`. */
  parquetZstdLevel: number;
  /** `archive.avroDeflateLevel`. */
  avroDeflateLevel: number;
  /** eventIDs remembered per partition for de-duplication. */
  dedupWindow: number;
  /** At most this many complete rolls are read back to rebuild the de-duplication window. */
  dedupManifests: number;
  /** Rolls of one partition queued or being written before consuming it waits (memory: rollBytes each). */
  maxQueuedRolls: number;
}

export interface RecoveryDeps {
  storage: ArchiveStorage;
  log: Logger;
  opts: RecoveryOptions;
  state: GroupState;
  admin: AdminClient;
  offsets: OffsetManager;
  loss: LossReporter;
  /** Tables' TTL settings for the data files that carry them (Parquet). */
  ttlSettings: TtlSettingsOf;
}

/**
 * Recovery of one assigned partition, before any of it is consumed: where to start (committed offset,
 * archive history, retention), the lineage check, `writing` rolls to redo or remove, the de-dup window.
 */
export class Recovery {
  constructor(private readonly deps: RecoveryDeps) {}

  /**
   * Recovery reads Kafka and the archive, either of which may be briefly away (a broker restart):
   * keep trying while the partition is ours, since nothing of it is consumed until it succeeds.
   */
  async recoverWithRetry(slot: Slot, before: Slot | undefined): Promise<PartitionWorker | null> {
    const { log, state } = this.deps;
    let lineageLoggedAt = -Infinity;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.recover(slot, before);
      } catch (err) {
        if (slot.retired || state.closing) return null;
        // A lineage mismatch is checked again as often as any failure (a broker that just restarted
        // may briefly report a lower high watermark), but said loudly only once a minute.
        const delay = Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
        const context = { err, topic: slot.topic, partition: slot.partition, attempt, delayMs: delay };
        if (!(err instanceof ArchiveLineageError)) log.error(context, 'partition recovery failed; retrying');
        else if (Date.now() - lineageLoggedAt >= 60_000) {
          lineageLoggedAt = Date.now();
          log.error(context, err.message);
        }
        // In short steps: a rebalance or a stop must not wait for the whole delay.
        for (const until = Date.now() + delay; Date.now() < until;) {
          if (slot.retired || state.closing) return null;
          await sleep(Math.min(500, until - Date.now()));
        }
        if (slot.retired || state.closing) return null;
      }
    }
  }

  private async recover(slot: Slot, before: Slot | undefined): Promise<PartitionWorker | null> {
    const { storage, log, opts, state, admin, offsets, loss } = this.deps;
    const { topic, partition } = slot;
    if (before) {
      const old = await before.ready;
      if (old) {
        old.retire();
        await old.drain();
      }
    }
    const committed = await offsets.committed(topic, partition);
    const history = await readPartitionHistory(storage, topic, partition, committed, log);
    const { low, high } = await admin.watermarks(topic, partition);
    const lineage = { topic, partition: String(partition) };
    const claimed = claimBeyondTopic(committed, history, high);
    if (claimed !== null) {
      metrics.archiveLineageMismatch.set(lineage, 1);
      throw new ArchiveLineageError(topic, partition, claimed, high);
    }
    metrics.archiveLineageMismatch.set(lineage, 0);

    // Normally at most one roll is left `writing`; redo only a contiguous chain of them.
    const redo: ManifestEntry[] = [];
    for (const e of history.pending) {
      const prev = redo[redo.length - 1];
      if (prev && e.first !== prev.last + 1n) {
        log.warn(
          { topic, partition, manifest: e.path },
          'a writing manifest not adjacent to the one before; not redone',
        );
        continue;
      }
      redo.push(e);
    }
    let start: bigint;
    if (redo[0]) start = redo[0].first;
    else if (committed === null && history.completeEnd === null) start = low;
    else {
      const c = committed ?? 0n;
      const e = history.completeEnd ?? 0n;
      start = c > e ? c : e;
    }
    if (start < low) {
      await loss.report(topic, partition, start, low - 1n, redo.length > 0 ? 'redo' : 'assignment');
      while (redo[0] && redo[0].last < low) redo.shift();
      // Consume from what Kafka still has. A redo that lost its beginning still covers its
      // exact range (same file names).
      start = low;
    }
    for (const e of history.stale) await this.removeStale(topic, partition, e);
    const dedup = new RecentIds(opts.dedupWindow);
    for (const k of await recentDedupKeys(storage, history, opts.dedupWindow, opts.dedupManifests, log)) {
      dedup.add(k);
    }
    if (slot.retired || state.closing) return null;
    // Bound to this consumer: a worker of a consumer since replaced must not fence or commit with
    // the new one (its own fails once it is disconnected, as a fence should).
    const consumer = state.consumer;
    const worker = new PartitionWorker(
      {
        topic,
        partition,
        storage,
        logger: log,
        rollBytes: opts.rollBytes,
        rollMs: opts.rollMs,
        format: opts.format,
        ttlSettings: this.deps.ttlSettings,
        parquetZstdLevel: opts.parquetZstdLevel,
        avroDeflateLevel: opts.avroDeflateLevel,
        commit: (offset) => offsets.commit(topic, partition, offset, consumer),
        fence: (offset) => offsets.commit(topic, partition, offset, consumer),
        maxQueuedRolls: opts.maxQueuedRolls,
      },
      { start: redo[0] ? redo[0].first : start, redo, dedup },
    );
    if (redo[0] && start > redo[0].first) worker.next = start;
    slot.worker = worker;
    const seekTo = worker.next;
    if (redo.length === 0 && committed !== seekTo)
      await offsets.commit(topic, partition, seekTo, consumer).catch(() => undefined);
    consumer?.seek({ topic, partition, offset: seekTo.toString() });
    log.info(
      {
        topic,
        partition,
        committed: committed?.toString() ?? null,
        completeEnd: history.completeEnd?.toString() ?? null,
        redo: redo.map((e) => `${e.first}-${e.last}`),
        start: seekTo.toString(),
        dedupKnown: dedup.size,
      },
      'partition recovered',
    );
    return worker;
  }

  /** Remove a `writing` roll that complete rolls already cover (see PartitionHistory.stale). */
  private async removeStale(topic: string, partition: number, e: ManifestEntry): Promise<void> {
    const { storage, log } = this.deps;
    log.warn(
      { topic, partition, manifest: e.path },
      'removing an abandoned roll already covered by complete rolls',
    );
    for (const f of e.manifest.files) {
      await storage.delete(indexPathFor(f));
      await storage.delete(f);
    }
    await storage.delete(e.path);
  }
}
