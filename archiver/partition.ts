import { crashPoint } from '../core/crash-points';
import type { Logger } from '../core/logger';
import { errorLabel, metrics } from '../core/metrics';
import { abortWhen, withRetry } from '../core/retry';
import { RecentIds } from './dedup';
import { chainHeadBefore } from '../archive/chain/head';
import type { ManifestEntry } from '../archive/history';
import type { ChainLink, DataFormat } from '../archive/storage/layout';
import type { TtlSettingsOf } from './ttl-settings';
import type { PreparedRow } from '../archive/rows';
import type { RollPlan } from '../archive/roll';
import { readAllErasedDigests } from '../archive/ledgers/erasure';
import { dropErasedRows } from './roll-filter';
import { RollBuilder } from './roll-builder';
import type { ArchiveStorage } from '../archive/storage/types';
import { RollCancelledError, writeRoll, type EncodedRoll } from './writer';

/**
 * One assigned partition of one consumer-group generation: its buffer, its queue of rolls and
 * its position. Rolls of a partition run one after the other (each commits before the next
 * writes), but overlap with consuming: a full buffer is handed to the queue and consuming goes on
 * until two rolls are waiting. Rows go into their roll's files as they are accepted (RollBuilder:
 * container blocks and key-index bytes, nothing per row kept on the heap); when a roll is queued
 * its blocks are sealed and deflated on the libuv pool (pure, no I/O) while the roll before it may
 * still be writing. Writing itself (manifests, files, commit) stays strictly one roll at a time.
 */

export interface PartitionStart {
  /** First offset this worker archives (everything before is archived or reported lost). */
  start: bigint;
  /** `writing` rolls to redo, lowest first; the first begins at `start`. */
  redo: ManifestEntry[];
  dedup: RecentIds;
}

export interface PartitionWorkerDeps {
  topic: string;
  partition: number;
  storage: ArchiveStorage;
  logger: Logger;
  rollBytes: number;
  rollMs: number;
  /** Format of the data files this worker's rolls write (archive.format; default avro). */
  format?: DataFormat;
  /** Tables' TTL settings, for the formats whose files carry them (Parquet). */
  ttlSettings?: TtlSettingsOf;
  /** Parquet files' zstd level (archive.parquetZstdLevel). */
  parquetZstdLevel?: number;
  /** Avro files' deflate level (archive.avroDeflateLevel). */
  avroDeflateLevel?: number;
  /** Commit `offset` (the next one to consume) for the partition; failures are the caller's to log. */
  commit: (offset: bigint) => Promise<void>;
  /**
   * Proves this member still owns the partition (an offset commit fails during a rebalance or
   * from a stale generation). Called before each manifest write of a roll.
   */
  fence?: (offset: bigint) => Promise<void>;
  /** Rolls waiting or running at which `accept` waits. */
  maxQueuedRolls?: number;
}

interface RollJob {
  first: bigint;
  last: bigint;
  /** The roll's plan and encoded files, started when the job is queued. */
  prepared: Promise<{ plan: RollPlan; encoded: EncodedRoll }>;
  /** The `writing` manifest this job redoes, if any. */
  redo: ManifestEntry | null;
  oldestTimestampMs: number | null;
}

/** The wait between two attempts at writing a roll: from 200 ms, doubling, up to 30 s. */
const ROLL_BACKOFF = { initialDelayMs: 200, maxDelayMs: 30_000 };

/** A roll being written: its plan and files, less the rows of keys erased meanwhile (counted by table). */
interface RollInWriting {
  plan: RollPlan;
  encoded: EncodedRoll;
  dropped: Map<string, number>;
}

/**
 * How large a roll may grow while the partition is catching up: 4 × rollBytes, but never past
 * 16 MiB because of that (a larger rollBytes is used as is). Bounds the buffer's memory.
 */
export function catchUpRollBytes(rollBytes: number): number {
  return Math.max(rollBytes, Math.min(4 * rollBytes, 16 * 1024 * 1024));
}

export class PartitionWorker {
  readonly topic: string;
  readonly partition: number;
  /** Next offset to take from Kafka. */
  next: bigint;
  /** Everything before this is durably archived (complete manifest). */
  archived: bigint;
  /** When the archived position last reached the high watermark (for the age estimate). */
  caughtUpAtMs = Date.now();
  readonly dedup: RecentIds;
  /** Key digests of the erasure ledger as last read (at each roll): messages of these keys are dropped. */
  erased: ReadonlySet<string> = new Set();

  private rollStart: bigint;
  private redo: ManifestEntry[];
  private rows: RollBuilder;
  private consumed = 0;
  private lastOffset: bigint | null = null;
  private openedAtMs = 0;
  private oldestTimestampMs: number | null = null;
  private readonly queue: RollJob[] = [];
  private running: Promise<void> | null = null;
  private cancelled = false;
  private retired = false;
  private readonly log: Logger;
  private readonly maxQueued: number;
  private idleWaiters: Array<() => void> = [];
  /**
   * The last complete manifest of this partition, which the next roll links to (the hash chain);
   * undefined until the first roll looks it up in the archive.
   */
  private chainHead: ChainLink | null | undefined = undefined;

  constructor(
    private readonly deps: PartitionWorkerDeps,
    start: PartitionStart,
  ) {
    this.topic = deps.topic;
    this.partition = deps.partition;
    this.next = start.start;
    this.archived = start.start;
    this.rollStart = start.start;
    this.redo = [...start.redo];
    this.dedup = start.dedup;
    this.rows = this.newRoll();
    this.maxQueued = deps.maxQueuedRolls ?? 2;
    this.log = deps.logger.child({ topic: deps.topic, partition: deps.partition });
  }

  private newRoll(): RollBuilder {
    return new RollBuilder(this.deps.topic, this.deps.partition, this.deps.format ?? 'avro');
  }

  get isCancelled(): boolean {
    return this.cancelled || this.retired;
  }

  /** Messages consumed but not yet durably archived (buffered or in queued rolls). */
  get pending(): boolean {
    return this.consumed > 0 || this.queue.length > 0 || this.running !== null;
  }

  /** Kafka timestamp of the oldest message not yet archived, when one is held here. */
  get oldestPendingTimestampMs(): number | null {
    let oldest = this.oldestTimestampMs;
    for (const job of this.queue) {
      if (job.oldestTimestampMs !== null && (oldest === null || job.oldestTimestampMs < oldest))
        oldest = job.oldestTimestampMs;
    }
    return oldest;
  }

  /**
   * Take the message at `offset` (already classified: a row to archive, or null for a message
   * that only counts as processed). Offsets below `next` were seen already and are ignored.
   * Returns true when the caller should wait for `room()` before the next message (rolls queued).
   */
  accept(offset: bigint, row: PreparedRow | null, timestampMs: number, highWatermark?: bigint): boolean {
    if (this.cancelled || this.retired || offset < this.next) return false;
    // A redo ends at its own last offset: close it before taking anything beyond.
    while (this.redo[0] && offset > this.redo[0].last) this.closeRedo(this.redo[0]);
    if (this.consumed === 0) this.openedAtMs = Date.now();
    if (this.oldestTimestampMs === null || timestampMs < this.oldestTimestampMs)
      this.oldestTimestampMs = timestampMs;
    if (row) this.rows.add(row);
    this.consumed += 1;
    this.lastOffset = offset;
    this.next = offset + 1n;
    const redo = this.redo[0];
    if (redo) {
      if (offset === redo.last) this.closeRedo(redo);
    } else if (this.rows.bytes >= this.deps.rollBytes) {
      // Catching up (Kafka holds more of this partition than the buffer does): small rolls cost
      // more than they save, so let the roll grow to catchUpRollBytes (a roll's fixed cost, about
      // a dozen durable puts, is paid per roll, not per record). Only where the roll ends moves:
      // recovery redoes the exact ranges the manifests name, whatever their size.
      const catchingUp =
        highWatermark !== undefined &&
        highWatermark - this.next > BigInt(this.consumed) &&
        this.rows.bytes < catchUpRollBytes(this.deps.rollBytes);
      if (!catchingUp) this.close();
    }
    return this.queue.length + (this.running ? 1 : 0) >= this.maxQueued;
  }

  /** Resolves when fewer than the maximum number of rolls are queued. */
  room(): Promise<void> {
    return this.waitForQueueBelow(this.maxQueued);
  }

  /** Roll the buffer when it is older than rollMs (called by the archiver's timer). */
  rollIfDue(now = Date.now()): void {
    if (this.cancelled || this.retired || this.consumed === 0 || this.redo.length > 0) return;
    if (now - this.openedAtMs >= this.deps.rollMs) this.close();
  }

  /** Roll whatever is buffered (graceful stop). A redo is closed only when it saw its last offset. */
  flush(): void {
    if (this.cancelled || this.retired || this.consumed === 0 || this.redo.length > 0) return;
    this.close();
  }

  /** Resolves when every queued roll has finished (or was cancelled). */
  async drain(): Promise<void> {
    while (this.running) await this.running;
  }

  /**
   * Take nothing more: the group moved on and kafkajs resumes from the committed offset, so the
   * open buffer is dropped (it will be consumed again); queued rolls still finish and commit.
   */
  retire(): void {
    this.retired = true;
    this.rows = this.newRoll();
    this.consumed = 0;
    this.oldestTimestampMs = null;
  }

  /**
   * Stop for good: the partition was revoked or the archiver is stopping hard. A roll in progress
   * stops at its next step (its manifest stays `writing`; whoever owns the partition next redoes
   * it), queued rolls are dropped; their offsets were not committed, so they are consumed again.
   */
  cancel(): void {
    this.cancelled = true;
    this.queue.length = 0;
    this.rows = this.newRoll();
    this.consumed = 0;
    this.wakeWaiters();
  }

  private closeRedo(redo: ManifestEntry): void {
    this.redo.shift();
    // Offsets of the redo range never seen again were deleted from Kafka meanwhile: the loss
    // check reports them. The roll still covers the exact range, so its file names stay the same.
    this.enqueue({ first: redo.first, last: redo.last, redo });
  }

  private close(): void {
    if (this.lastOffset === null) return;
    this.enqueue({ first: this.rollStart, last: this.lastOffset, redo: null });
  }

  private enqueue(range: { first: bigint; last: bigint; redo: ManifestEntry | null }): void {
    // Both callers close at or after the last buffered offset, so the whole buffer goes.
    // Seal and deflate now (pure): the roll before may still be writing meanwhile. Awaited by
    // runJob; a job dropped by cancel() is never awaited, so its failure is nobody's business.
    const { parquetZstdLevel: zstdLevel, avroDeflateLevel: deflateLevel } = this.deps;
    const prepared = this.rows.finish(range.first, range.last, this.deps.ttlSettings, {
      ...(zstdLevel !== undefined ? { zstdLevel } : {}),
      ...(deflateLevel !== undefined ? { deflateLevel } : {}),
    });
    prepared.catch(() => undefined);
    this.queue.push({ ...range, prepared, oldestTimestampMs: this.oldestTimestampMs });
    this.rows = this.newRoll();
    this.consumed = 0;
    this.oldestTimestampMs = null;
    this.rollStart = range.last + 1n;
    if (!this.running) this.running = this.runQueue();
  }

  private async runQueue(): Promise<void> {
    try {
      for (let job = this.queue.shift(); job && !this.cancelled; job = this.queue.shift()) {
        await this.runJob(job);
        this.wakeWaiters();
      }
    } finally {
      this.running = null;
      this.wakeWaiters();
    }
  }

  /** Write a queued roll, then commit past it. */
  private async runJob(job: RollJob): Promise<void> {
    const plan = await this.writeJob(job);
    if (!plan) return;
    this.archived = job.last + 1n;
    this.log.debug(
      { first: String(job.first), last: String(job.last), rows: plan.records, files: plan.files.length },
      'roll complete',
    );
    crashPoint('archiver.before-commit');
    try {
      await this.deps.commit(job.last + 1n);
    } catch (err) {
      // The manifest is complete: whoever resumes starts after it even without this commit.
      this.log.warn({ err, offset: String(job.last + 1n) }, 'offset commit failed after a complete roll');
    }
    crashPoint('archiver.after-commit');
  }

  /**
   * Write the roll, trying again after any failure until it is written (its plan) or the worker is
   * cancelled (null). Any failure, a non-retryable one too: no later roll of the partition may be
   * written before this one (its records would be skipped) and its offsets wait for it.
   * ttlstream_archiver_roll_failing is 1 from a failed attempt until then (the alert
   * TtlstreamArchiveWritesFailing pages on it, with the reason from ttlstream_archiver_roll_errors_total).
   */
  private async writeJob(job: RollJob): Promise<RollPlan | null> {
    const roll: RollInWriting = { ...(await job.prepared), dropped: new Map() };
    const failing = { topic: this.topic, partition: String(this.partition) };
    const { signal, stop } = abortWhen(() => this.cancelled);
    try {
      await withRetry(() => this.writeOnce(job, roll), {
        retries: Infinity,
        ...ROLL_BACKOFF,
        signal,
        isRetryable: (err) => !(err instanceof RollCancelledError || this.cancelled),
        onRetry: (err, attempt, delayMs) => {
          metrics.archiveRollErrors.inc({ sink: this.deps.storage.kind, reason: errorLabel(err) });
          metrics.archiveRollFailing.set(failing, 1);
          this.log.warn(
            { err, attempt, delayMs: Math.round(delayMs) },
            'writing a roll failed; retrying (offsets stay uncommitted)',
          );
        },
      });
      return roll.plan;
    } catch (err) {
      if (!(err instanceof RollCancelledError || this.cancelled)) throw err;
      this.log.info(
        { first: String(job.first), last: String(job.last) },
        'roll cancelled; the next owner redoes it',
      );
      return null;
    } finally {
      metrics.archiveRollFailing.set(failing, 0);
      stop();
    }
  }

  /** One attempt at a roll: link it to the chain, leave out the keys erased meanwhile, write it. */
  private async writeOnce(job: RollJob, roll: RollInWriting): Promise<void> {
    const checkpoint = (): void => {
      if (this.cancelled) throw new RollCancelledError();
    };
    checkpoint();
    const fence = this.deps.fence;
    // Not `??=`: null (the partition's first roll) is a known head, not one to look up again.
    if (this.chainHead === undefined)
      this.chainHead = await chainHeadBefore(
        this.deps.storage,
        this.topic,
        this.partition,
        job.first,
        this.log,
      );
    // Every attempt reads the erasure ledger afresh: a key erased while this roll waited or
    // retried must not be written (docs/decisions/0013). The same read refreshes what the
    // classification of the next messages drops.
    this.erased = await readAllErasedDigests(this.deps.storage);
    const filtered = await dropErasedRows(roll.plan, roll.encoded, this.erased);
    roll.plan = filtered.plan;
    roll.encoded = filtered.encoded;
    for (const [table, n] of filtered.dropped) roll.dropped.set(table, (roll.dropped.get(table) ?? 0) + n);
    const result = await writeRoll(this.deps.storage, roll.plan, {
      encoded: roll.encoded,
      prev: this.chainHead,
      previous: job.redo?.manifest ?? null,
      checkpoint,
      ...(fence ? { fence: () => fence(job.first) } : {}),
    });
    this.chainHead = result.link;
    metrics.archiveFiles.inc({ sink: this.deps.storage.kind }, result.files);
    metrics.archiveBytes.inc({ sink: this.deps.storage.kind }, result.bytes);
    metrics.archiveRecords.inc({ topic: this.topic }, roll.plan.records);
    for (const [table, n] of roll.dropped) {
      metrics.archiveErasedDropped.inc({ topic: this.topic, table }, n);
      this.log.info({ table, rows: n }, 'records of erased keys left out of the roll');
    }
  }

  private waitForQueueBelow(n: number): Promise<void> {
    if (this.cancelled || this.queue.length + (this.running ? 1 : 0) < n) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.cancelled || this.queue.length + (this.running ? 1 : 0) < n) resolve();
        else this.idleWaiters.push(check);
      };
      this.idleWaiters.push(check);
    });
  }

  private wakeWaiters(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
