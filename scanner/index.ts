import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { defaultOwnerId, startLeaseGroup } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { ensureInternalTable } from '../core/tables';
import { EnabledTables, type EnabledTablesSource } from '../pipeline/enabled-tables';
import { GuardStore } from '../pipeline/guard';
import { ensureMarksTable } from '../pipeline/marks';
import { ScanFailures } from './failures';
import { GuardWatch } from './guard-watch';
import { KeySchemas } from './key-schema';
import { MarkedRecently } from './marked-recently';
import { MarkWriter } from './mark-writer';
import type { ScannerOptions } from './options';
import { TokenBucket } from './rate-limiter';
import { describeExpiryIndex } from '../control/expiry-index';
import { runIndexShard } from './index-worker';
import { runSegment, type ScannerContext } from './segment-worker';

/** About 100 bytes each: a few tens of MiB at most per table; past it, the oldest marks may be written again. */
const MARKED_RECENTLY_PER_TABLE = 250_000;
/** How long an expiry index's status (DescribeTable + completion row) is reused. */
const INDEX_STATUS_REFRESH_MS = 10_000;

export { TokenBucket } from './rate-limiter';
export { projectionFor } from './segment-worker';
export { scannerOptionsFrom, type ScannerInput, type ScannerOptions } from './options';

export interface ScannerDeps {
  /** Its slice of the configuration, resolved at start-up: `scannerOptionsFrom(config)`. */
  options: ScannerOptions;
  ddb: DynamoDBClient;
  settingsStore: EnabledTablesSource;
  logger: Logger;
  ownerId?: string;
}

export interface RunningScanner {
  /** Stop taking segments, finish the page in flight, release the segment leases. */
  stop(): Promise<void>;
  ownerId: string;
  /** Segment leases held now, as `<table>#<segment>`. */
  segments(): string[];
}

/** Lease names: `<table>#<segment>` for scan segments, `<table>#q<shard>` for expiry-index shards. */
export function splitName(name: string): { table: string; segment: number; indexShard?: number } {
  const i = name.lastIndexOf('#');
  const unit = name.slice(i + 1);
  if (unit.startsWith('q'))
    return { table: name.slice(0, i), segment: -1, indexShard: Number(unit.slice(1)) };
  return { table: name.slice(0, i), segment: Number(unit) };
}

/** One token bucket per table, made at its first use. */
function perTableBuckets(ratePerSec: number): (table: string) => TokenBucket {
  const buckets = new Map<string, TokenBucket>();
  return (table) => {
    let b = buckets.get(table);
    if (!b) {
      b = new TokenBucket({ ratePerSec });
      buckets.set(table, b);
    }
    return b;
  };
}

/**
 * Index mode needs the index ACTIVE (created and backfilled); until then the table is scanned as before. Each
 * table's status is reused for INDEX_STATUS_REFRESH_MS.
 */
function indexReadiness(ddb: DynamoDBClient, controlTable: string): (table: string) => Promise<boolean> {
  const readiness = new Map<string, { at: number; active: Promise<boolean> }>();
  return (table) => {
    const cached = readiness.get(table);
    if (cached && Date.now() - cached.at < INDEX_STATUS_REFRESH_MS) return cached.active;
    const active = describeExpiryIndex(ddb, controlTable, table).then(
      (d) => d.status === 'ACTIVE',
      () => false,
    );
    readiness.set(table, { at: Date.now(), active });
    return active;
  };
}

/**
 * The scanner's lease names: every segment of every ENABLED table, sorted by table, and the shards of the expiry
 * index of a table whose index is ACTIVE.
 */
async function leaseNames(
  tables: EnabledTables,
  totalSegments: number,
  indexActive: (table: string) => Promise<boolean>,
): Promise<string[]> {
  const enabled = [...(await tables.get()).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const names: string[] = [];
  for (const [t, settings] of enabled) {
    names.push(...Array.from({ length: totalSegments }, (_, s) => `${t}#${s}`));
    if (settings.expiryIndex && (await indexActive(t)))
      names.push(...Array.from({ length: settings.expiryIndex.shards }, (_, q) => `${t}#q${q}`));
  }
  return names;
}

/** Scan segments held, per table (index shards are work of another kind; their reads show in items_queried). */
function reportSegmentsOwned(held: readonly string[]): void {
  const perTable = new Map<string, number>();
  for (const n of held.map(splitName).filter((u) => u.indexShard === undefined))
    perTable.set(n.table, (perTable.get(n.table) ?? 0) + 1);
  metrics.segmentsOwned.reset();
  for (const [table, count] of perTable) metrics.segmentsOwned.set({ table }, count);
}

/**
 * The scanner: leases a fair share of the (table, segment) pairs of every ENABLED table and scans them in passes,
 * writing durable marks for expired items. Background work: paced per table by a token bucket that backs off on
 * throttling.
 */
export async function startScanner(deps: ScannerDeps): Promise<RunningScanner> {
  const { ddb, options } = deps;
  const ownerId = deps.ownerId ?? defaultOwnerId();
  const logger = deps.logger.child({ component: 'scanner', owner: ownerId });
  await ensureInternalTable(ddb, options.controlTable);
  await ensureMarksTable(ddb, options.marksTable);

  let held: string[] = [];
  const tables = new EnabledTables(deps.settingsStore, Math.max(500, Math.min(5000, options.passIntervalMs)));
  const guard = new GuardWatch(new GuardStore(ddb, options.controlTable), options.guard, logger);
  const marked = new MarkedRecently(options.remarkAfterMs, MARKED_RECENTLY_PER_TABLE);
  const marks = new MarkWriter({
    ddb,
    marksTable: options.marksTable,
    guard,
    marked,
    logger,
    delayMs: options.markDelayMs,
    perShardLimit: options.marksPerRow,
    bellIntervalMs: options.bellIntervalMs,
  });
  const indexActive = indexReadiness(ddb, options.controlTable);
  const ctx: ScannerContext = {
    indexActive,
    options,
    ddb,
    logger,
    tables,
    keySchemas: new KeySchemas(ddb),
    guard,
    bucket: perTableBuckets(options.readRateLimit),
    sweepBucket: perTableBuckets(options.sweepReadRateLimit),
    heldSegments: (table) =>
      held
        .map(splitName)
        .flatMap((n) => (n.table === table && n.indexShard === undefined ? [n.segment] : [])),
    heldIndexShards: (table) =>
      held
        .map(splitName)
        .flatMap((n) => (n.table === table && n.indexShard !== undefined ? [n.indexShard] : [])),
    marked,
    marks,
    failures: new ScanFailures(Date.now),
    now: Date.now,
  };

  const leases = startLeaseGroup({
    ddb,
    table: options.controlTable,
    kind: 'scan',
    ownerId,
    leaseMs: options.leaseMs,
    logger,
    names: () => leaseNames(tables, options.totalSegments, indexActive),
    work: (lease) => {
      const { table, segment, indexShard } = splitName(lease.name);
      return indexShard !== undefined
        ? runIndexShard(ctx, table, indexShard, lease)
        : runSegment(ctx, table, segment, lease);
    },
    onHeld(now) {
      held = [...now];
      reportSegmentsOwned(now);
    },
  });

  logger.info({ totalSegments: options.totalSegments }, 'scanner started');
  return {
    ownerId,
    segments: () => leases.held(),
    async stop() {
      await leases.stop();
      // Marks gathered but not yet written, and the trailing doorbells: written now rather than found again by
      // the next scanner's pass.
      await marks.close();
      logger.info('scanner stopped');
    },
  };
}
