import {
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { crashPoint } from '../core/crash-points';
import { withRetry, type Backoff, type RetryOptions } from '../core/retry';
import type { LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics, tableLabel } from '../core/metrics';
import { evaluate, relevantAttributes } from '../policy';
import { EXPIRY_SHARD_ATTRIBUTE, expirySortKey } from '../policy/expiry-index';
import { INTERNAL_KEY } from '../core/tables';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import type { EnabledTables } from '../pipeline/enabled-tables';
import { batchGetAll } from '../pipeline/ddb-batch';
import { keyIdentity, pick } from '../pipeline/image';
import type { ScanFailures } from './failures';
import { addressOf, type Mark } from '../pipeline/marks';
import { BacklogWatch, PROBE_SAMPLE, Reservoir } from './backlog-watch';
import type { MarkedRecently } from './marked-recently';
import type { ScannerOptions } from './options';
import { readPage, settleRate } from './page-read';
import type { MarkWriter } from './mark-writer';
import type { GuardWatch } from './guard-watch';
import type { KeySchemas } from './key-schema';
import type { TokenBucket } from './rate-limiter';

export interface ScannerContext {
  options: ScannerOptions;
  ddb: DynamoDBClient;
  logger: Logger;
  tables: EnabledTables;
  keySchemas: KeySchemas;
  guard: GuardWatch;
  bucket(table: string): TokenBucket;
  /** The safety-net sweep's own, lower ceiling (`scanner.sweepReadRateLimit`), for index-mode tables. */
  sweepBucket(table: string): TokenBucket;
  /** Segments of `table` this process holds now (for the guard's notion of a complete pass). */
  heldSegments(table: string): number[];
  /** True while `table`'s expiry index is ACTIVE (created and backfilled): only then is discovery by index. */
  indexActive(table: string): Promise<boolean>;
  /** Expiry-index shards of `table` this process holds now (index mode). */
  heldIndexShards(table: string): number[];
  /** Marks written lately, not written again by every pass over a backlog. */
  marked: MarkedRecently;
  /** Gathers the pages' marks into mark rows and rings the shards' doorbells. */
  marks: MarkWriter;
  /** The tables' failed passes and queries: counted, the last one exposed, repeats logged once a minute. */
  failures: ScanFailures;
  now: () => number;
}

/** An item a pass left marked: its key and the expiry it was marked for. */
interface Sampled {
  keys: Item;
  expiresAtMs: number;
}

/** What a pass found. */
interface PassStats {
  startedAtMs: number;
  endedAtMs: number;
  expired: number;
  /** Marks written (first marks and re-marks). */
  marked: number;
  /** A random sample of the items the pass left marked (written now, or marked lately and still there). */
  sample: Reservoir<Sampled>;
}

/** `ProjectionExpression` over the key attributes and what the policy needs, with placeholders for every name. */
export function projectionFor(keyNames: readonly string[], settings: TableTtlSettings) {
  const all = [...new Set([...keyNames, ...relevantAttributes(settings)])];
  const names: Record<string, string> = {};
  all.forEach((n, i) => (names[`#a${i}`] = n));
  return { expression: Object.keys(names).join(', '), names };
}

/** The wait after a failed pass or query of the index: from 1 s, doubling, up to 30 s. */
export const FAILED_PASS_BACKOFF: Backoff = { initialDelayMs: 1000, maxDelayMs: 30_000 };

/**
 * How a scanner worker retries a failed round while its lease lasts: with back-off, forgetting the key schema of a
 * table that is gone (it may come back with another). A non-retryable error (its `retryable` is false) ends the
 * work with it: the lease group logs it with its code and hands the lease back.
 */
export function retryWhileLeased(
  ctx: ScannerContext,
  table: string,
  lease: LeaseHandle,
  onRetry: (err: unknown, failures: number) => void,
): RetryOptions {
  return {
    retries: Infinity,
    ...FAILED_PASS_BACKOFF,
    signal: lease.signal,
    onRetry: (err, failures) => {
      if ((err as { name?: string }).name === 'ResourceNotFoundException') ctx.keySchemas.forget(table);
      onRetry(err, failures);
    },
  };
}

/**
 * Scan one segment of one table in passes while the lease is held. Each page: pace by the table's token bucket,
 * evaluate, let the guard judge the running pass, write marks for expired items. A pass restarts from the
 * beginning after a lease change (no checkpoint: a repeated page costs reads, and its marks were remembered or are harmless twice).
 */
export async function runSegment(
  ctx: ScannerContext,
  table: string,
  segment: number,
  lease: LeaseHandle,
): Promise<void> {
  const log = ctx.logger.child({ table, segment });
  const retry = retryWhileLeased(ctx, table, lease, (err) =>
    ctx.failures.failed(table, 'scan-pass', err, log),
  );
  try {
    while (!lease.signal.aborted) {
      if (!(await withRetry(() => segmentRound(ctx, table, segment, lease, log), retry))) return;
    }
  } catch (err) {
    if (lease.signal.aborted) return;
    // Not retried here: the lease group logs it with its code and hands the lease back.
    ctx.failures.counted(table, 'scan-pass', err);
    throw err;
  }
}

/** One pass over the segment and the pause after it; false when the segment's work is over. */
async function segmentRound(
  ctx: ScannerContext,
  table: string,
  segment: number,
  lease: LeaseHandle,
  log: Logger,
): Promise<boolean> {
  const settings = (await ctx.tables.get()).get(table);
  // TTL disabled (or the table gone): end the work; the lease group hands the lease back.
  if (!settings) return false;
  if (settings.expiryIndex && (await ctx.indexActive(table))) {
    // Index mode: the index finds what expires; this segment is only the safety-net sweep.
    if (!(await awaitSweep(ctx, table, segment, lease))) return false;
    await sweepPass(ctx, table, segment, settings, lease, log);
    if (!lease.signal.aborted) await sweepDone(ctx, table, segment);
    return true;
  }
  const pass = await scanPass(ctx, table, segment, settings, lease, log);
  if (lease.signal.aborted) return false;
  if (pass.sample.items.length === 0) {
    await sleep(ctx.options.passIntervalMs, undefined, { signal: lease.signal }).catch(() => undefined);
  } else {
    await awaitDrain(ctx, table, pass, lease, log);
  }
  return true;
}

/** A pass under way: what it found so far, the mark writes it waits for before it ends, and when it began. */
interface Pass {
  stats: PassStats;
  written: Set<Promise<void>>;
  started: bigint;
}

function startPass(ctx: ScannerContext): Pass {
  return {
    stats: {
      startedAtMs: ctx.now(),
      endedAtMs: 0,
      expired: 0,
      marked: 0,
      sample: new Reservoir(PROBE_SAMPLE),
    },
    written: new Set(),
    started: process.hrtime.bigint(),
  };
}

/** A pass over the segment: every expired item marked for the producers (unless marked lately). */
async function scanPass(
  ctx: ScannerContext,
  table: string,
  segment: number,
  settings: TableTtlSettings,
  lease: LeaseHandle,
  log: Logger,
): Promise<PassStats> {
  const pass = startPass(ctx);
  const keyNames = await ctx.keySchemas.get(table);
  const reads = { projection: projectionFor(keyNames, settings), bucket: ctx.bucket(table) };
  const complete = await eachPage(ctx, table, segment, reads, lease, (items) =>
    markPage(ctx, table, judgePage(ctx, table, settings, keyNames, items), pass, log),
  );
  if (complete) await endPass(ctx, table, segment, pass);
  return pass.stats;
}

/**
 * The safety-net sweep of an index-mode table's segment: a pass at the sweep's own, lower rate ceiling that also
 * reads the index keys, to tell an expired item the index holds from one it misses.
 */
async function sweepPass(
  ctx: ScannerContext,
  table: string,
  segment: number,
  settings: TableTtlSettings,
  lease: LeaseHandle,
  log: Logger,
): Promise<void> {
  const pass = startPass(ctx);
  const keyNames = await ctx.keySchemas.get(table);
  const indexKeys = [EXPIRY_SHARD_ATTRIBUTE, expirySortKey(settings).attribute];
  const reads = {
    projection: projectionFor([...keyNames, ...indexKeys], settings),
    bucket: ctx.sweepBucket(table),
  };
  const complete = await eachPage(ctx, table, segment, reads, lease, async (items) => {
    const page = judgePage(ctx, table, settings, keyNames, items);
    // Counted when marked, not each time a sweep passes it: under load the next sweep can come before the
    // deletion, and the same unstamped item counted twice overstated what the index missed.
    for (const item of page.toMark) {
      metrics.sweepExpiredFound.inc({ table });
      if (indexKeys.some((k) => item[k] === undefined)) metrics.expiryIndexMissed.inc({ table });
    }
    await markPage(ctx, table, page, pass, log);
  });
  if (complete) await endPass(ctx, table, segment, pass);
}

/**
 * Read the segment page by page with `reads`' projection, paced by its token bucket, handing each page's items
 * to `onPage`. False when the lease ended before the last page.
 */
async function eachPage(
  ctx: ScannerContext,
  table: string,
  segment: number,
  reads: { projection: { expression: string; names: Record<string, string> }; bucket: TokenBucket },
  lease: LeaseHandle,
  onPage: (items: Item[]) => Promise<void>,
): Promise<boolean> {
  const { bucket, projection } = reads;
  const pageSize = ctx.options.pageSize;
  let start: Record<string, AttributeValue> | undefined;
  do {
    if (lease.signal.aborted) return false;
    await bucket.take(pageSize, lease.signal);
    const { page, throttled } = await readPage(
      ctx.ddb,
      () =>
        new ScanCommand({
          TableName: table,
          Segment: segment,
          TotalSegments: ctx.options.totalSegments,
          ProjectionExpression: projection.expression,
          ExpressionAttributeNames: projection.names,
          Limit: pageSize,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      bucket,
      lease.signal,
    );
    const items = page.Items ?? [];
    bucket.refund(Math.max(0, pageSize - (page.ScannedCount ?? items.length)));
    settleRate(bucket, throttled);
    crashPoint('scanner.after-page');
    await onPage(items);
    start = page.LastEvaluatedKey;
  } while (start);
  return true;
}

/** One page judged: its expired items, the marks to write now and the items they are for. */
interface JudgedPage {
  now: number;
  scanned: number;
  expired: number;
  marks: Mark[];
  toMark: Item[];
  /** Every expired item of the page, marked lately or by this page: what the pass's sample draws from. */
  left: Sampled[];
}

function judgePage(
  ctx: ScannerContext,
  table: string,
  settings: TableTtlSettings,
  keyNames: readonly string[],
  items: Item[],
): JudgedPage {
  const now = ctx.now();
  const page: JudgedPage = { now, scanned: items.length, expired: 0, marks: [], toMark: [], left: [] };
  for (const item of items) {
    const verdict = evaluate(settings, item, now);
    if (verdict.kind === 'ignored') metrics.ignoredValues.inc({ table, reason: verdict.reason });
    if (verdict.kind !== 'expires' || !verdict.expired) continue;
    page.expired++;
    const keys = pick(item, keyNames);
    page.left.push({ keys, expiresAtMs: verdict.expiresAtMs });
    const address = addressOf(table, keys, ctx.options.markShards);
    if (ctx.marked.has(table, address.sk, verdict.expiresAtMs, now)) continue;
    page.toMark.push(item);
    page.marks.push({ address, markedAtMs: now, expiresAtMs: verdict.expiresAtMs });
  }
  metrics.itemsScanned.inc({ table }, items.length);
  return page;
}

/**
 * Let the guard judge the page, then hand its marks to the writer. Judged before the marks are handed over (every
 * expired item, marked lately or not), so a mass expiry pauses the table before its marks reach the producer.
 */
async function markPage(
  ctx: ScannerContext,
  table: string,
  page: JudgedPage,
  pass: Pass,
  log: Logger,
): Promise<void> {
  pass.stats.expired += page.expired;
  const guard = await ctx.guard.page(table, page.scanned, page.expired);
  if (page.expired === 0) return;
  // The guard row as judged (at most a second old): after an operator's cancel, do not mark. Also when every
  // expired item was marked lately: cancel discarded those marks, so after a confirm they must all be written
  // again. The writer reads the row fresh right before it writes, so no mark row appears after a cancel.
  if (guard.cancelled) {
    ctx.marked.forgetTable(table);
    log.debug({ skipped: page.expired }, 'guard cancelled by an operator: not marking until confirmed');
    return;
  }
  if (page.marks.length > 0) {
    const handed = ctx.marks.hand(table, page.marks, page.now);
    pass.written.add(handed.durable);
    pass.stats.marked += page.marks.length;
    await handed.wait;
  }
  for (const l of page.left) pass.stats.sample.offer(l);
}

/**
 * The pass is over when its marks are durable (at most scanner.markDelayMs later): the backlog probes and the
 * guard's complete-pass judgment rely on them; a failed write fails the pass, which is retried.
 */
async function endPass(ctx: ScannerContext, table: string, segment: number, pass: Pass): Promise<void> {
  await Promise.all(pass.written);
  pass.stats.endedAtMs = ctx.now();
  metrics.scanPasses.inc({ table });
  metrics.lastPassTimestamp.set({ table: tableLabel(table) }, pass.stats.endedAtMs / 1000);
  metrics.passDuration.observe({ table }, Number(process.hrtime.bigint() - pass.started) / 1e9);
  ctx.failures.succeeded(table, ctx.logger);
  await ctx.guard.segmentDone(table, segment, ctx.heldSegments(table));
}

const sweepRowKey = (table: string, segment: number) => ({
  [INTERNAL_KEY]: { S: `sweep#${table}#${segment}` },
});

/**
 * Wait until this segment's safety-net sweep is due: `scanner.sweepIntervalMs` after the last completed one, as
 * recorded in the control table, so restarts do not sweep again. A segment never swept starts its clock now (the
 * backfill, not the sweep, is how existing items join the index). False when the lease ended meanwhile.
 */
async function awaitSweep(
  ctx: ScannerContext,
  table: string,
  segment: number,
  lease: LeaseHandle,
): Promise<boolean> {
  const control = ctx.options.controlTable;
  const { Item } = await ctx.ddb.send(
    new GetItemCommand({ TableName: control, Key: sweepRowKey(table, segment), ConsistentRead: true }),
  );
  let doneAt = Number(Item?.doneAt?.N);
  if (!Number.isFinite(doneAt)) {
    doneAt = ctx.now();
    await sweepDone(ctx, table, segment, doneAt);
  }
  while (!lease.signal.aborted) {
    const wait = doneAt + ctx.options.sweepIntervalMs - ctx.now();
    if (wait <= 0) return true;
    // Look at the settings now and then: index mode switched off ends the sweep schedule.
    await sleep(Math.min(wait, 5000), undefined, { signal: lease.signal }).catch(() => undefined);
    if (!(await ctx.tables.get()).get(table)?.expiryIndex) return false;
  }
  return false;
}

async function sweepDone(ctx: ScannerContext, table: string, segment: number, at = ctx.now()): Promise<void> {
  await ctx.ddb.send(
    new PutItemCommand({
      TableName: ctx.options.controlTable,
      Item: { ...sweepRowKey(table, segment), kind: { S: 'sweep' }, doneAt: { N: String(at) } },
    }),
  );
}

/** How often a pause looks at the table's guard (GuardWatch re-reads the row at most once a second). */
const GUARD_LOOK_MS = 1000;

/**
 * The pause after a pass that left marks: probe a sample of them until BacklogWatch says to scan again (see there
 * why). A failed probe ends the pause: the next pass reports and retries what is wrong.
 */
async function awaitDrain(
  ctx: ScannerContext,
  table: string,
  pass: PassStats,
  lease: LeaseHandle,
  log: Logger,
): Promise<void> {
  // One entry per key (BatchGetItem refuses duplicates; a pass sees an item once, but a sample costs nothing to check).
  const wanted = new Map(pass.sample.items.map((s) => [keyIdentity(s.keys), s]));
  const sample = [...wanted.values()];
  const watch = new BacklogWatch(
    ctx.options,
    pass.endedAtMs,
    pass.endedAtMs - pass.startedAtMs,
    sample.length,
  );
  const keyNames = Object.keys(sample[0]?.keys ?? {});
  let wait = watch.firstWait();
  for (let probes = 0; ; probes++) {
    // Wait in steps of at most a second, looking at the guard: an operator's cancel discards the table's marks, and
    // this scanner must forget them before a confirm, or it would not mark those items again for remarkAfterMs.
    for (const until = ctx.now() + wait; ;) {
      const step = Math.min(GUARD_LOOK_MS, until - ctx.now());
      if (step > 0) await sleep(step, undefined, { signal: lease.signal }).catch(() => undefined);
      if (lease.signal.aborted) return;
      if ((await ctx.guard.state(table)).cancelled) {
        ctx.marked.forgetTable(table);
        return;
      }
      if (ctx.now() >= until) break;
    }
    const settings = (await ctx.tables.get()).get(table);
    if (!settings) return;
    let present = 0;
    try {
      await ctx.bucket(table).take(sample.length, lease.signal);
      const found = await batchGetAll(
        ctx.ddb,
        table,
        sample.map((s) => s.keys),
        { consistent: false, projection: projectionFor(keyNames, settings) },
      );
      const now = ctx.now();
      for (const item of found) {
        const verdict = evaluate(settings, item, now);
        const expiresAtMs = wanted.get(keyIdentity(pick(item, keyNames)))?.expiresAtMs;
        // Still there with the verdict it was marked for: its mark still waits for a producer.
        if (verdict.kind === 'expires' && verdict.expired && verdict.expiresAtMs === expiresAtMs) present++;
      }
    } catch (err) {
      if (lease.signal.aborted) return;
      log.debug({ err }, 'backlog probe failed; scanning again');
      return;
    }
    const verdict = watch.observe(ctx.now(), present);
    if (verdict.pass) {
      log.debug(
        {
          reason: verdict.reason,
          probes: probes + 1,
          pausedMs: ctx.now() - pass.endedAtMs,
          passMs: pass.endedAtMs - pass.startedAtMs,
          expired: pass.expired,
          marked: pass.marked,
          sampled: sample.length,
          present,
        },
        'scanning again',
      );
      return;
    }
    wait = verdict.waitMs;
  }
}
