import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaseLostError } from '../core/errors';
import type { LeaseHandle } from '../core/leases';
import { metrics } from '../core/metrics';
import { withRetry } from '../core/retry';
import { INTERNAL_KEY, INTERNAL_SORT_KEY } from '../core/tables';
import { processBatch, type BatchContext } from './batch';
import { dynamoRetry } from './ddb-batch';
import { INTENT_SUFFIX, parseRow, shardPk, type ShardRow } from './marks';

type Key = Record<string, AttributeValue>;

async function query(ctx: BatchContext, shard: number, start: Key | undefined, limit: number) {
  return withRetry(
    () =>
      ctx.ddb.send(
        new QueryCommand({
          TableName: ctx.config.tables.marks,
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

/**
 * Read the next batch of a shard. A mark and its intent sort next to each other; when a page ends on a mark, one
 * more row is read so that the pair is never split across two batches (the intent decides what the mark means).
 */
async function nextBatch(
  ctx: BatchContext,
  shard: number,
  start: Key | undefined,
): Promise<{ rows: ShardRow[]; next: Key | undefined }> {
  const page = await query(ctx, shard, start, ctx.config.producer.batchSize);
  const items = page.Items ?? [];
  let next = page.LastEvaluatedKey;
  const last = items[items.length - 1];
  const lastSk = last?.[INTERNAL_SORT_KEY]?.S;
  if (next && lastSk !== undefined && !lastSk.endsWith(INTENT_SUFFIX)) {
    const peek = await query(ctx, shard, next, 1);
    const row = peek.Items?.[0];
    if (row && row[INTERNAL_SORT_KEY]?.S === lastSk + INTENT_SUFFIX) {
      items.push(row);
      next = peek.LastEvaluatedKey;
    }
  }
  return { rows: items.map(parseRow), next };
}

/** An idle shard is polled less and less often, down to once per this (or pollMs, if larger). */
const IDLE_POLL_CAP_MS = 1000;

/**
 * Work on one leased shard until the lease ends: sweep the shard batch by batch; after a sweep that changed
 * nothing, wait before the next one: `pollMs`, doubling with each further idle sweep up to about a second, so idle
 * shards cost the DynamoDB API little while a new mark still waits at most that long.
 */
export async function runShard(ctx: BatchContext, shard: number, lease: LeaseHandle): Promise<void> {
  const log = ctx.logger.child({ shard });
  let cursor: Key | undefined;
  let idle = true;
  let idleSweeps = 0;
  let failures = 0;
  while (!lease.signal.aborted) {
    try {
      const { rows, next } = await nextBatch(ctx, shard, cursor);
      if (rows.length > 0) {
        const started = process.hrtime.bigint();
        const stats = await processBatch(ctx, rows, lease);
        metrics.batchDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
        if (stats.acted > 0) idle = false;
      }
      failures = 0;
      cursor = next;
      if (!cursor) {
        idleSweeps = idle ? idleSweeps + 1 : 0;
        if (idle) {
          const poll = ctx.config.producer.pollMs;
          const wait = Math.min(poll * 2 ** Math.min(idleSweeps - 1, 10), Math.max(poll, IDLE_POLL_CAP_MS));
          await sleep(wait, undefined, { signal: lease.signal }).catch(() => undefined);
        }
        idle = true;
      }
    } catch (err) {
      if (err instanceof LeaseLostError || lease.signal.aborted) return;
      failures++;
      // The batch left durable rows behind (marks, intents); the next attempt reconciles them.
      log.warn({ err, failures }, 'producer batch failed; retrying');
      const backoff = Math.min(10_000, ctx.config.producer.pollMs * 2 ** Math.min(failures, 6));
      await sleep(backoff, undefined, { signal: lease.signal }).catch(() => undefined);
      cursor = undefined;
    }
  }
}
