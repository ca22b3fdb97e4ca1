import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { LeaseLostError } from '../core/errors';
import type { LeaseHandle } from '../core/leases';
import { metrics } from '../core/metrics';
import { withRetry, type Backoff } from '../core/retry';
import { INTERNAL_KEY } from '../core/tables';
import { processBatch, type BatchContext, type BatchInput } from './batch/runner';
import { countMarks, markBacklog } from './backlog';
import { dynamoRetry } from '../pipeline/ddb-batch';
import { loadJournal } from './journal';
import { parseMarkRow, readBell, readMarkRows, shardPk, type Mark } from '../pipeline/marks';

type Key = Record<string, AttributeValue>;

async function query(ctx: BatchContext, shard: number, start: Key | undefined, limit: number) {
  return withRetry(
    () =>
      ctx.ddb.send(
        new QueryCommand({
          TableName: ctx.options.marksTable,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': INTERNAL_KEY },
          ExpressionAttributeValues: { ':pk': { S: shardPk(shard) } },
          ConsistentRead: true,
          Limit: limit,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    dynamoRetry,
  );
}

/** Marks per row in a shard's recent batches (the estimate for the next batch's first Query). */
export interface RowSizeHint {
  marksPerRow?: number;
}

/**
 * How many rows the next Query of a batch asks for (pure). Rows vary in size (a scanner writes what it gathered for
 * the shard: a few marks up to about a batch, scanner/mark-writer.ts), so the count follows the sizes seen so far in
 * this batch, else in the shard's previous batches, else one row: asking for a few dozen rows of a batch's worth of
 * marks each would make a batch of thousands (journals of megabytes, a publish far ahead of the deletes).
 */
export function rowsToQuery(want: number, have: number, rowsRead: number, hint: RowSizeHint): number {
  const perRow = rowsRead > 0 ? have / rowsRead : hint.marksPerRow;
  if (perRow === undefined) return 1;
  return Math.max(1, Math.min(100, Math.ceil((want - have) / Math.max(1, perRow))));
}

/** Read the next batch of a shard: whole mark rows until they hold about `batchSize` marks. */
async function nextMarks(
  ctx: BatchContext,
  shard: number,
  start: Key | undefined,
  hint: RowSizeHint,
): Promise<{ marks: Mark[]; next: Key | undefined }> {
  const want = ctx.options.batchSize;
  const marks: Mark[] = [];
  let rows = 0;
  let next = start;
  do {
    const page = await query(ctx, shard, next, rowsToQuery(want, marks.length, rows, hint));
    for (const row of page.Items ?? []) marks.push(...parseMarkRow(row));
    rows += page.Items?.length ?? 0;
    next = page.LastEvaluatedKey;
  } while (next && marks.length < want);
  if (rows > 0) hint.marksPerRow = marks.length / rows;
  return { marks, next };
}

/** The wait after a failed batch: from twice `pollMs`, doubling, up to 10 s (or 64 × `pollMs` when less). */
function failedBatchBackoff(pollMs: number): Backoff {
  return { initialDelayMs: 2 * pollMs, maxDelayMs: Math.min(10_000, 64 * pollMs) };
}

/**
 * After a sweep: wait until the shard's doorbell rings (new marks, a guard confirm), or `producer.idleSweepMs`
 * passes, or the lease ends; the producer's Doorbells read every waiting shard's bell in one request. `checkFirst`
 * (after a sweep that acted): look at the bell once before the first wait, so marks written during the sweep are
 * swept at once. Returns the last token read, which the next sweep takes as its own (a token read earlier than the
 * sweep's start can only make a ring look newer, never hide one).
 */
function waitForWork(
  ctx: BatchContext,
  shard: number,
  lease: LeaseHandle,
  bell: string,
  checkFirst: boolean,
): Promise<string | undefined> {
  return ctx.bells.wait({
    shard,
    token: bell,
    checkFirst,
    deadline: Date.now() + ctx.options.idleSweepMs,
    signal: lease.signal,
  });
}

/**
 * Work on one leased shard until the lease ends: sweep the shard batch by batch, each sweep starting with what the
 * journal holds; after a sweep, wait for the doorbell (waitForWork) unless the journal carries deletions to the
 * next sweep. A sweep that acted looks at the bell at once: a shard whose scanners wrote nothing since the sweep
 * started is not swept again for nothing (a bell read instead of a bell read, a journal Query and a marks Query).
 * A failed batch is retried with back-off from the journal (its durable rows are finished first); a non-retryable
 * error (its `retryable` is false) ends the work with it, and the lease group logs it with its code and hands the
 * shard back.
 */
export async function runShard(ctx: BatchContext, shard: number, lease: LeaseHandle): Promise<void> {
  const log = ctx.logger.child({ shard });
  let cursor: Key | undefined;
  let idle = true;
  // The bell's token when the current sweep started: a ring after that means marks the sweep may have missed.
  let bell = '';
  // A token waitForWork read right before this sweep: the sweep's own.
  let bellRead: string | undefined;
  // Items whose deletion the journal carries to the next sweep: their marks wait for that sweep's recovery.
  let pending = new Set<string>();
  const rowSize: RowSizeHint = {};
  // Marks per table this sweep found (markBacklog, when the sweep completes).
  let found = new Map<string, number>();
  const timed = async (input: BatchInput): Promise<void> => {
    const started = process.hrtime.bigint();
    const stats = await processBatch(ctx, input, lease);
    metrics.batchDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    if (stats.acted > 0) idle = false;
    for (const sk of stats.pending) pending.add(sk);
  };
  const retry = {
    retries: Infinity,
    ...failedBatchBackoff(ctx.options.pollMs),
    signal: lease.signal,
    onRetry: (err: unknown, failures: number) => {
      // The batch left durable rows behind (marks, journal); the next sweep starts by finishing them.
      log.warn({ err, failures }, 'producer batch failed; retrying');
      cursor = undefined;
    },
  };
  try {
    while (!lease.signal.aborted) await withRetry(nextBatch, retry);
  } catch (err) {
    if (err instanceof LeaseLostError || lease.signal.aborted) return;
    throw err;
  } finally {
    markBacklog.drop(shard);
  }

  /** One batch of the sweep; the first of a sweep finishes what the journal holds. */
  async function nextBatch(): Promise<void> {
    if (!cursor) {
      found = new Map();
      bell = bellRead ?? (await readBell(ctx.ddb, ctx.options.marksTable, shard));
      bellRead = undefined;
      // Each sweep starts by finishing what earlier batches left in the journal (a crash, a failed request, a
      // paused table), before any mark of the same items is looked at.
      const recovered = await loadJournal(ctx.ddb, ctx.options.marksTable, shard);
      pending = new Set();
      if (recovered.intents.size > 0 || recovered.rowKeys.length > 0) {
        log.info({ intents: recovered.intents.size }, 'finishing journaled deletions');
        // With the mark rows the journaled decisions were taken on: a mark left behind by a retracted or finished
        // decision would otherwise be taken again, for a decision with the same eventID (0009).
        const rows = [...recovered.intents.values()].flatMap((i) => (i.markRow ? [i.markRow] : []));
        const marks = await readMarkRows(ctx.ddb, ctx.options.marksTable, shard, rows);
        await timed({ shard, marks, recovered });
      }
    }
    const { marks, next } = await nextMarks(ctx, shard, cursor, rowSize);
    countMarks(found, marks);
    if (marks.length > 0) await timed({ shard, marks, skip: pending });
    cursor = next;
    if (!cursor) {
      markBacklog.sweepDone(shard, found);
      // Journaled deletions carried to the next sweep are finished by it at once.
      if (idle || pending.size === 0) bellRead = await waitForWork(ctx, shard, lease, bell, !idle);
      idle = true;
    }
  }
}
