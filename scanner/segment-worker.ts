import {
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
  type ScanCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TtlstreamConfig } from '../core/config';
import { crashPoint } from '../core/crash-points';
import type { LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { isDynamoThrottleOrTransient, watchThrottling, withRetry } from '../core/retry';
import { evaluate, relevantAttributes } from '../policy';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import type { EnabledTables } from '../producer/enabled-tables';
import { addressOf, writeMarks, type Mark } from '../producer/marks';
import type { MarkedRecently } from './marked-recently';
import type { GuardWatch } from './guard-watch';
import type { KeySchemas } from './key-schema';
import type { TokenBucket } from './rate-limiter';

export interface ScannerContext {
  config: TtlstreamConfig;
  ddb: DynamoDBClient;
  logger: Logger;
  tables: EnabledTables;
  keySchemas: KeySchemas;
  guard: GuardWatch;
  bucket(table: string): TokenBucket;
  /** Segments of `table` this process holds now (for the guard's notion of a complete pass). */
  heldSegments(table: string): number[];
  /** Marks written lately, not written again by every pass over a backlog. */
  marked: MarkedRecently;
  now: () => number;
}

/** What a pass found: expired items, and how many of them needed a mark (the rest were marked lately). */
interface PassStats {
  expired: number;
  marked: number;
}

/**
 * The pause before the next pass: `passIntervalMs`, doubled after each pass that found items it had marked in an
 * earlier pass still there (the producers have a backlog: scanning faster only competes with their deletions for
 * the server, and the items expiring meanwhile wait behind the backlog anyway), up to `backlogPassIntervalMs`.
 * Exported for tests.
 */
export function nextPause(config: TtlstreamConfig['scanner'], backlogPasses: number): number {
  const base = config.passIntervalMs;
  return Math.min(
    Math.max(base, 1) * 2 ** Math.min(backlogPasses, 20),
    Math.max(base, config.backlogPassIntervalMs),
  );
}

/** `ProjectionExpression` over the key attributes and what the policy needs, with placeholders for every name. */
export function projectionFor(keyNames: readonly string[], settings: TableTtlSettings) {
  const all = [...new Set([...keyNames, ...relevantAttributes(settings)])];
  const names: Record<string, string> = {};
  all.forEach((n, i) => (names[`#a${i}`] = n));
  return { expression: Object.keys(names).join(', '), names };
}

function pick(item: Item, names: readonly string[]): Item {
  const out: Item = {};
  for (const n of names) if (item[n] !== undefined) out[n] = item[n];
  return out;
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
  const { config } = ctx;
  let failures = 0;
  let backlogPasses = 0;
  while (!lease.signal.aborted) {
    try {
      const settings = (await ctx.tables.get()).get(table);
      // TTL disabled (or the table gone): end the work; the lease group hands the lease back.
      if (!settings) return;
      const pass = await scanPass(ctx, table, segment, settings, lease, log);
      failures = 0;
      // Items marked in an earlier pass and still there: the producers have a backlog.
      backlogPasses = pass.expired > pass.marked ? backlogPasses + 1 : 0;
      await sleep(nextPause(config.scanner, backlogPasses), undefined, { signal: lease.signal }).catch(
        () => undefined,
      );
    } catch (err) {
      if (lease.signal.aborted) return;
      failures++;
      if ((err as { name?: string }).name === 'ResourceNotFoundException') ctx.keySchemas.forget(table);
      log.warn({ err, failures }, 'scan pass failed; retrying');
      await sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)), undefined, {
        signal: lease.signal,
      }).catch(() => undefined);
    }
  }
}

async function scanPass(
  ctx: ScannerContext,
  table: string,
  segment: number,
  settings: TableTtlSettings,
  lease: LeaseHandle,
  log: Logger,
): Promise<PassStats> {
  const { config } = ctx;
  const stats: PassStats = { expired: 0, marked: 0 };
  const keyNames = await ctx.keySchemas.get(table);
  const projection = projectionFor(keyNames, settings);
  const bucket = ctx.bucket(table);
  const pageSize = config.scanner.pageSize;
  const started = process.hrtime.bigint();
  let start: Record<string, AttributeValue> | undefined;
  do {
    if (lease.signal.aborted) return stats;
    await bucket.take(pageSize, lease.signal);
    // Only the server's throttling lowers the rate, also when the SDK retried it on its own; a refused or broken
    // connection (a DynamoDB restart) is retried with back-off but says nothing about the server's capacity.
    let throttled = false;
    const page: ScanCommandOutput = await withRetry(
      () =>
        ctx.ddb.send(
          watchThrottling(
            new ScanCommand({
              TableName: table,
              Segment: segment,
              TotalSegments: config.scanner.totalSegments,
              ProjectionExpression: projection.expression,
              ExpressionAttributeNames: projection.names,
              Limit: pageSize,
              ...(start ? { ExclusiveStartKey: start } : {}),
            }),
            () => (throttled = true),
          ),
        ),
      {
        retries: 8,
        initialDelayMs: 100,
        maxDelayMs: 10_000,
        isRetryable: isDynamoThrottleOrTransient,
        onRetry: () => {
          if (throttled) bucket.throttled();
          throttled = false;
        },
        signal: lease.signal,
      },
    );
    const items = page.Items ?? [];
    bucket.refund(Math.max(0, pageSize - (page.ScannedCount ?? items.length)));
    if (throttled) bucket.throttled();
    else bucket.succeeded();
    crashPoint('scanner.after-page');

    const now = ctx.now();
    const marks: Mark[] = [];
    let expired = 0;
    for (const item of items) {
      const verdict = evaluate(settings, item, now);
      if (verdict.kind === 'ignored') metrics.ignoredValues.inc({ table, reason: verdict.reason });
      if (verdict.kind === 'expires' && verdict.expired) {
        expired++;
        const address = addressOf(table, pick(item, keyNames), config.producer.shards);
        if (ctx.marked.has(table, address.sk, verdict.expiresAtMs, now)) continue;
        marks.push({ address, markedAtMs: now, expiresAtMs: verdict.expiresAtMs });
      }
    }
    metrics.itemsScanned.inc({ table }, items.length);
    stats.expired += expired;

    // Judge before writing (every expired item, marked lately or not), so a mass expiry pauses the table before its
    // marks reach the producer.
    await ctx.guard.page(table, items.length, expired);
    if (expired > 0) {
      // Read fresh before writing: after an operator's cancel no new marks may appear. Also when every expired item
      // was marked lately: cancel discarded those marks, so after a confirm they must all be written again.
      if ((await ctx.guard.state(table, true)).cancelled) {
        ctx.marked.forgetTable(table);
        log.debug({ skipped: expired }, 'guard cancelled by an operator: not marking until confirmed');
      } else if (marks.length > 0) {
        await writeMarks(ctx.ddb, config.tables.marks, table, marks, now);
        ctx.marked.add(
          table,
          marks.map((m) => ({ sk: m.address.sk, expiresAtMs: m.expiresAtMs as number })),
          now,
        );
        stats.marked += marks.length;
        metrics.expiredFound.inc({ table }, marks.length);
        crashPoint('scanner.after-mark-write');
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);

  metrics.scanPasses.inc({ table });
  metrics.passDuration.observe({ table }, Number(process.hrtime.bigint() - started) / 1e9);
  await ctx.guard.segmentDone(table, segment, ctx.heldSegments(table));
  return stats;
}
