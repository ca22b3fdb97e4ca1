import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import { abortWhen, retryableByFlag, withRetry } from '../../core/retry';
import { RecentIds } from '../dedup';
import {
  ArchiveLineageError,
  claimBeyondTopic,
  readPartitionHistory,
  recentDedupKeys,
  type ManifestEntry,
  type PartitionHistory,
} from '../../archive/history';
import type { TtlSettingsOf } from '../ttl-settings';
import type { LossReporter } from '../loss';
import { PartitionWorker } from '../partition';
import { deleteKeyIndex } from '../../archive/storage/key-index';
import type { DataFormat } from '../../archive/storage/layout';
import type { ArchiveStorage } from '../../archive/storage/types';
import type { AdminClient } from './admin';
import type { OffsetManager } from './offsets';
import type { GroupState, Slot } from './state';

/** The wait between two attempts at recovering a partition: from 250 ms, doubling, up to 10 s. */
const RECOVERY_BACKOFF = { initialDelayMs: 250, maxDelayMs: 10_000 };

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
   * keep trying while the partition is ours. Nothing of it is consumed until recovery succeeds and no
   * other member recovers it meanwhile, so no error ends the trying, not even a non-retryable one (a
   * lineage mismatch: an operator's fix, or a restarted broker that reported a low high watermark for a
   * moment, is picked up at the next attempt). `retryable` decides how a failure is reported: a
   * retryable one at every attempt, a non-retryable one with its code at most once a minute.
   */
  async recoverWithRetry(slot: Slot, before: Slot | undefined): Promise<PartitionWorker | null> {
    const { log, state } = this.deps;
    const givenUp = (): boolean => slot.retired || state.closing;
    const { signal, stop } = abortWhen(givenUp);
    let loudAt = -Infinity;
    try {
      // A retry after the partition was given up does nothing; the first attempt always runs (it settles `before`).
      const recoverOnce = (n: number): Promise<PartitionWorker | null> =>
        n > 0 && givenUp() ? Promise.resolve(null) : this.recover(slot, before);
      return await withRetry(recoverOnce, {
        retries: Infinity,
        ...RECOVERY_BACKOFF,
        signal,
        isRetryable: () => true,
        onRetry: (err, attempt, delayMs) => {
          const context = { err, topic: slot.topic, partition: slot.partition, attempt, delayMs };
          if (retryableByFlag(err)) log.error(context, 'partition recovery failed; retrying');
          else if (Date.now() - loudAt >= 60_000) {
            loudAt = Date.now();
            log.error(context, err instanceof Error ? err.message : String(err));
          }
        },
      });
    } catch (err) {
      if (givenUp()) return null;
      throw err;
    } finally {
      stop();
    }
  }

  private async recover(slot: Slot, before: Slot | undefined): Promise<PartitionWorker | null> {
    const { storage, log, opts, state, admin, offsets, loss } = this.deps;
    const { topic, partition } = slot;
    await settled(before);
    const committed = await offsets.committed(topic, partition);
    const history = await readPartitionHistory(storage, topic, partition, committed, log);
    const { low, high } = await admin.watermarks(topic, partition);
    checkLineage(topic, partition, committed, history, high);
    const redo = this.redoChain(topic, partition, history.pending);
    let start = resumeAt(committed, history, redo, low);
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

  /** Normally at most one roll is left `writing`; redo only a contiguous chain of them. */
  private redoChain(topic: string, partition: number, pending: readonly ManifestEntry[]): ManifestEntry[] {
    const redo: ManifestEntry[] = [];
    for (const e of pending) {
      const prev = redo[redo.length - 1];
      if (prev && e.first !== prev.last + 1n) {
        this.deps.log.warn(
          { topic, partition, manifest: e.path },
          'a writing manifest not adjacent to the one before; not redone',
        );
        continue;
      }
      redo.push(e);
    }
    return redo;
  }

  /** Remove a `writing` roll that complete rolls already cover (see PartitionHistory.stale). */
  private async removeStale(topic: string, partition: number, e: ManifestEntry): Promise<void> {
    const { storage, log } = this.deps;
    log.warn(
      { topic, partition, manifest: e.path },
      'removing an abandoned roll already covered by complete rolls',
    );
    for (const f of e.manifest.files) {
      await deleteKeyIndex(storage, f);
      await storage.delete(f);
    }
    await storage.delete(e.path);
  }
}

/** The partition's previous worker (of the generation before) has retired and finished its rolls. */
async function settled(before: Slot | undefined): Promise<void> {
  const old = await before?.ready;
  if (!old) return;
  old.retire();
  await old.drain();
}

/**
 * Refuse a partition whose archive or group claims offsets beyond the topic's high watermark (a topic re-created
 * under the same name): its new records would be taken as archived. The gauge says which partitions are refused.
 */
function checkLineage(
  topic: string,
  partition: number,
  committed: bigint | null,
  history: PartitionHistory,
  high: bigint,
): void {
  const lineage = { topic, partition: String(partition) };
  const claimed = claimBeyondTopic(committed, history, high);
  metrics.archiveLineageMismatch.set(lineage, claimed !== null ? 1 : 0);
  if (claimed !== null) throw new ArchiveLineageError(topic, partition, claimed, high);
}

/**
 * Where archiving resumes: the first roll to redo, else past both the committed offset and the archive's end, else
 * (neither known) the oldest offset Kafka has.
 */
function resumeAt(
  committed: bigint | null,
  history: PartitionHistory,
  redo: readonly ManifestEntry[],
  low: bigint,
): bigint {
  if (redo[0]) return redo[0].first;
  if (committed === null && history.completeEnd === null) return low;
  const c = committed ?? 0n;
  const e = history.completeEnd ?? 0n;
  return c > e ? c : e;
}
