import { DescribeTableCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { crashPoint } from '../core/crash-points';
import type { Logger } from '../core/logger';
import { withRetry } from '../core/retry';
import type { LeaseHandle } from '../core/leases';
import { metrics, tableLabel } from '../core/metrics';
import { evaluate } from '../policy';
import { EXPIRY_SHARD_ATTRIBUTE, expirySortKey } from '../policy/expiry-index';
import type { TableTtlSettings } from '../policy/settings';
import { pick } from '../pipeline/image';
import { addressOf, type Mark } from '../pipeline/marks';
import { censusBeforeMarking } from './index-census';
import { expiryPages } from './index-query';
import { decideRewind, type HeadItem, type RewindState } from './index-rewind';
import { retryWhileLeased, type ScannerContext } from './segment-worker';

/** How long a table's ItemCount (for the guard's share) is reused. */
const ITEM_COUNT_REFRESH_MS = 60_000;

/**
 * Index-driven discovery of one shard of one table's expiry index: Query `shard = n AND expiry ≤ now` (the range is
 * policy's `expiryQueryRange`), judge every item with `evaluate`, hand expired ones to the same mark writer as a scan
 * page. The query continues after the last item it read (`cursor`), so an item is normally read once; every
 * `scanner.indexRewindMs` it starts from the lowest expiry again, for items that reached the eventually consistent
 * index late or were kept (held, not yet expired by `evaluate`). The cursor lives in memory only and moves only
 * once the marks of what it passed are durable: after a crash or a lease change the next owner starts from the
 * lowest expiry, so nothing is skipped. The producer's re-read and conditional delete stay the authority.
 */
export async function runIndexShard(
  ctx: ScannerContext,
  table: string,
  shard: number,
  lease: LeaseHandle,
): Promise<void> {
  const log = ctx.logger.child({ table, shard, discovery: 'index' });
  const at: ShardPosition = { cursor: undefined, rewindAt: 0, rewind: { epochStartMs: ctx.now() } };
  const retry = retryWhileLeased(ctx, table, lease, (err) =>
    ctx.failures.failed(table, 'index-query', err, log),
  );
  try {
    while (!lease.signal.aborted) {
      if (!(await withRetry(() => indexRound(ctx, table, shard, lease, log, at), retry))) return;
    }
  } catch (err) {
    if (lease.signal.aborted) return;
    // Not retried here: the lease group logs it with its code and hands the lease back.
    ctx.failures.counted(table, 'index-query', err);
    throw err;
  }
}

/** Where a shard's queries are: the cursor to continue from, when the next rewind is due, and its state. */
interface ShardPosition {
  cursor: Record<string, AttributeValue> | undefined;
  rewindAt: number;
  rewind: RewindState;
}

/** One query of the shard (after a rewind, when due) and the poll interval after it; false when the work is over. */
async function indexRound(
  ctx: ScannerContext,
  table: string,
  shard: number,
  lease: LeaseHandle,
  log: Logger,
  at: ShardPosition,
): Promise<boolean> {
  try {
    const settings = (await ctx.tables.get()).get(table);
    // TTL disabled or the index opted out: the lease group hands the lease back.
    if (!settings?.expiryIndex || !(await ctx.indexActive(table))) return false;
    if (ctx.now() >= at.rewindAt) await rewindWhenDue(ctx, table, shard, settings, lease, log, at);
    const fromLowest = at.cursor === undefined;
    const startedAt = ctx.now();
    const read = await queryShard(ctx, table, shard, settings, at.cursor, lease);
    at.cursor = read.cursor;
    if (lease.signal.aborted) return false;
    // A read from the lowest expiry saw the shard's whole due backlog: what re-arms a confirmed guard episode.
    if (fromLowest)
      await ctx.guard.indexShardRead(
        table,
        shard,
        read.expired,
        startedAt,
        ctx.heldIndexShards(table),
        read.share,
      );
    await sleep(ctx.options.indexPollMs, undefined, { signal: lease.signal }).catch(() => undefined);
    return true;
  } catch (err) {
    // A cursor outside the new range (the settings moved the cutoff): start from the lowest expiry, now.
    if ((err as { name?: string }).name !== 'ValidationException' || at.cursor === undefined) throw err;
    at.cursor = undefined;
    at.rewind = { epochStartMs: ctx.now() };
    return true;
  }
}

/**
 * Start the next query from the lowest expiry again, unless the head of the due range is this worker's backlog
 * being deleted (./index-rewind.ts): then the rewind is put off. With indexRewindMs 0 (every query) there is
 * nothing to put off.
 */
async function rewindWhenDue(
  ctx: ScannerContext,
  table: string,
  shard: number,
  settings: TableTtlSettings,
  lease: LeaseHandle,
  log: Logger,
  at: ShardPosition,
): Promise<void> {
  const { indexRewindMs } = ctx.options;
  at.rewindAt = ctx.now() + indexRewindMs;
  const verdict =
    at.cursor === undefined || indexRewindMs === 0
      ? undefined
      : decideRewind(
          await probeHead(ctx, table, shard, settings, lease),
          at.rewind,
          ctx.now(),
          REWIND_MAX_DEFERRALS * indexRewindMs,
        );
  if (verdict && !verdict.rewind) {
    at.rewind = { ...at.rewind, head: verdict.head, deferredSinceMs: at.rewind.deferredSinceMs ?? ctx.now() };
    metrics.indexRewinds.inc({ table: tableLabel(table), outcome: 'deferred' });
    log.debug({ head: verdict.head.length }, 'rewind put off: the head of the shard is its backlog');
    return;
  }
  if (at.cursor !== undefined) metrics.indexRewinds.inc({ table: tableLabel(table), outcome: 'rewound' });
  at.cursor = undefined;
  at.rewind = { epochStartMs: ctx.now() };
}

/** Items the rewind probe reads from the head of a shard's due range. */
const REWIND_PROBE_ITEMS = 10;
/** A rewind is put off for at most this many rewind intervals in a row. */
const REWIND_MAX_DEFERRALS = 10;

/** The head of the shard's due range, judged as the query judges it, with what this process remembers marking. */
async function probeHead(
  ctx: ScannerContext,
  table: string,
  shard: number,
  settings: TableTtlSettings,
  lease: LeaseHandle,
): Promise<HeadItem[]> {
  const keyNames = await ctx.keySchemas.get(table);
  const now = ctx.now();
  for await (const page of expiryPages(ctx, table, shard, settings, undefined, lease, REWIND_PROBE_ITEMS)) {
    return page.items.map((item) => {
      const verdict = evaluate(settings, item, now);
      const address = addressOf(table, pick(item, keyNames), ctx.options.markShards);
      if (verdict.kind !== 'expires' || !verdict.expired) return { id: address.sk, expired: false };
      const markedAtMs = ctx.marked.markedAt(table, address.sk, verdict.expiresAtMs);
      return {
        id: `${address.sk}@${verdict.expiresAtMs}`,
        expired: true,
        ...(markedAtMs !== undefined ? { markedAtMs } : {}),
      };
    });
  }
  return [];
}

/**
 * One query of the shard to its end; resolves once the marks are durable, with the cursor to continue from, the
 * expired items it read and the items this process's shards stand for.
 */
async function queryShard(
  ctx: ScannerContext,
  table: string,
  shard: number,
  settings: TableTtlSettings,
  from: Record<string, AttributeValue> | undefined,
  lease: LeaseHandle,
): Promise<{ cursor: Record<string, AttributeValue> | undefined; expired: number; share: number }> {
  const { options } = ctx;
  const keyNames = await ctx.keySchemas.get(table);
  const sort = expirySortKey(settings);
  const windowMs = guardWindowMs(ctx);
  const items = await tableItems(ctx, table);
  // Before anything is marked in a guard window, the table's expired backlog is counted and judged: a mass expiry
  // pauses the table before its first mark, as a scan pass's first pages would (index-census.ts).
  await censusBeforeMarking(ctx, table, settings, items, windowMs, lease);
  const share = shareOf(ctx, table, settings, items);
  const written = new Set<Promise<void>>();
  let cursor = from;
  let expiredRead = 0;
  for await (const page of expiryPages(ctx, table, shard, settings, from, lease)) {
    crashPoint('scanner.after-page');
    const now = ctx.now();
    const marks: Mark[] = [];
    let expired = 0;
    for (const item of page.items) {
      const verdict = evaluate(settings, item, now);
      if (verdict.kind === 'ignored') metrics.ignoredValues.inc({ table, reason: verdict.reason });
      if (verdict.kind !== 'expires' || !verdict.expired) continue;
      expired++;
      const keys = pick(item, keyNames);
      const address = addressOf(table, keys, options.markShards);
      if (ctx.marked.has(table, address.sk, verdict.expiresAtMs, now)) continue;
      marks.push({ address, markedAtMs: now, expiresAtMs: verdict.expiresAtMs });
    }
    expiredRead += expired;
    const guard = await ctx.guard.indexPage(table, expired, share, windowMs);
    if (expired > 0 && guard.cancelled) {
      // As a scan page: after an operator's cancel nothing is marked, and what was remembered is forgotten.
      ctx.marked.forgetTable(table);
    } else if (marks.length > 0) {
      const handed = ctx.marks.hand(table, marks, now);
      written.add(handed.durable);
      await handed.wait;
    }
    const last = page.items[page.items.length - 1];
    if (last) cursor = pick(last, [...keyNames, EXPIRY_SHARD_ATTRIBUTE, sort.attribute]);
  }
  if (lease.signal.aborted) return { cursor: from, expired: expiredRead, share };
  // The cursor passes these items only once their marks are durable; a failed write fails the query (and the
  // cursor stays where it was).
  await Promise.all(written);
  metrics.lastPassTimestamp.set({ table: tableLabel(table) }, ctx.now() / 1000);
  ctx.failures.succeeded(table, ctx.logger);
  return { cursor, expired: expiredRead, share };
}

const itemCounts = new WeakMap<ScannerContext, Map<string, { at: number; count: number }>>();

/** The guard's window in index mode: a rewind, the nearest thing to a pass. */
function guardWindowMs(ctx: ScannerContext): number {
  return ctx.options.indexRewindMs || ctx.options.passIntervalMs;
}

/** The table's ItemCount (DynamoDB's estimate, updated about every six hours; 0 when not known), reused a while. */
async function tableItems(ctx: ScannerContext, table: string): Promise<number> {
  let cache = itemCounts.get(ctx);
  if (!cache) itemCounts.set(ctx, (cache = new Map()));
  let entry = cache.get(table);
  if (!entry || ctx.now() - entry.at >= ITEM_COUNT_REFRESH_MS) {
    const out = await ctx.ddb.send(new DescribeTableCommand({ TableName: table }));
    entry = { at: ctx.now(), count: out.Table?.ItemCount ?? 0 };
    cache.set(table, entry);
  }
  return entry.count;
}

/** The items this process's shards stand for: the table's items × held index shards / shards. */
function shareOf(ctx: ScannerContext, table: string, settings: TableTtlSettings, items: number): number {
  const shards = settings.expiryIndex?.shards ?? 1;
  const held = Math.max(1, ctx.heldIndexShards(table).length);
  return Math.floor((items * held) / shards);
}
