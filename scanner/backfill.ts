import {
  ConditionalCheckFailedException,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultOwnerId, startLeaseGroup, type LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { forEachLimited } from '../core/concurrency';
import { isRetryable, withRetry } from '../core/retry';
import { INTERNAL_KEY, ensureInternalTable } from '../core/tables';
import { recordBackfilled } from '../control/expiry-index';
import {
  EXPIRY_DERIVED_ATTRIBUTE,
  EXPIRY_SHARD_ATTRIBUTE,
  cosmosExpiryMs,
  expiryShardOf,
  expirySortKey,
  secondsText,
} from '../policy/expiry-index';
import { decimalToNumber, parseDecimal } from '../policy/decimal';
import { relevantAttributes } from '../policy/projection';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import { TokenBucket } from './rate-limiter';

export interface BackfillOptions {
  ddb: DynamoDBClient;
  controlTable: string;
  table: string;
  settings: TableTtlSettings;
  /** Parallel scan segments, leased like the scanner's, each with its own checkpoint. */
  segments: number;
  /** Ceiling on items read plus items written per second (this process). */
  ratePerSec: number;
  dryRun: boolean;
  leaseMs: number;
  logger: Logger;
  ownerId?: string;
  pageSize?: number;
  /** Concurrent conditional updates per segment. */
  concurrency?: number;
  signal?: AbortSignal;
  onProgress?: (p: BackfillProgress) => void;
}

export interface BackfillProgress {
  /** Items read by this process. */
  scanned: number;
  /** Items this process stamped (or, with dryRun, would stamp). */
  stamped: number;
  /** Items already in the index (written through the stamp, or stamped before). */
  alreadyStamped: number;
  /** Items the index cannot hold: no expiry to sort by (e.g. cosmos ttl -1, no last write), or a key type mismatch. */
  skipped: number;
  /** Conditional updates refused because a writer changed or deleted the item meanwhile (its own write stamps it). */
  conflicts: number;
  segmentsDone: number;
  segments: number;
  /** The table's approximate item count (DescribeTable), for a progress bar. */
  approximateItems: number;
}

const checkpointKey = (table: string, segment: number) => ({
  [INTERNAL_KEY]: { S: `backfill#${table}#${segment}` },
});

/**
 * `ttlstream index backfill`: stamps the shard attribute (and cosmos's derived expiry) on existing items so they
 * join the expiry index. Parallel Scan by leased segments; each page's position is checkpointed in the control
 * table after its updates, so a process killed at any point is resumed by the next (or a peer, after the lease
 * time) from its last page, and repeating a page is harmless. Every update is conditional: it only adds ttlstream's
 * own attributes, to an item that still exists and (cosmos) still has the TTL inputs that were read, so it never
 * overwrites a concurrent write nor re-creates a deleted item. When every segment is done the completion is
 * recorded, which turns the index ACTIVE for the scanner.
 */
export async function backfillExpiryIndex(o: BackfillOptions): Promise<BackfillProgress> {
  const { ddb, table } = o;
  const described = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
  const keyNames = (described?.KeySchema ?? []).map((k) => k.AttributeName as string);
  const progress: BackfillProgress = {
    scanned: 0,
    stamped: 0,
    alreadyStamped: 0,
    skipped: 0,
    conflicts: 0,
    segmentsDone: 0,
    segments: o.segments,
    approximateItems: described?.ItemCount ?? 0,
  };
  const bucket = new TokenBucket({ ratePerSec: o.ratePerSec });
  const report = () => o.onProgress?.({ ...progress });
  await ensureInternalTable(ddb, o.controlTable);

  if (o.dryRun) {
    // Nothing written, so no leases or checkpoints either: one process reads every segment.
    const never = new AbortController();
    await Promise.all(
      Array.from({ length: o.segments }, async (_, segment) => {
        await backfillSegment(o, keyNames, segment, bucket, progress, report, {
          signal: o.signal ?? never.signal,
        });
        progress.segmentsDone++;
        report();
      }),
    );
    return progress;
  }

  const isDone = async (segment: number): Promise<boolean> => {
    const { Item } = await ddb.send(
      new GetItemCommand({
        TableName: o.controlTable,
        Key: checkpointKey(table, segment),
        ConsistentRead: true,
      }),
    );
    return Item?.done?.BOOL === true;
  };
  const pending = async (): Promise<number[]> => {
    const out: number[] = [];
    for (let s = 0; s < o.segments; s++) if (!(await isDone(s))) out.push(s);
    return out;
  };
  const group = startLeaseGroup({
    ddb,
    table: o.controlTable,
    kind: 'backfill',
    ownerId: o.ownerId ?? defaultOwnerId(),
    leaseMs: o.leaseMs,
    logger: o.logger,
    names: async () => (await pending()).map((s) => `${table}#${s}`),
    work: async (lease) => {
      const segment = Number(lease.name.slice(lease.name.lastIndexOf('#') + 1));
      await backfillSegment(o, keyNames, segment, bucket, progress, report, lease);
    },
  });
  try {
    for (;;) {
      if (o.signal?.aborted) return progress;
      const left = await pending();
      progress.segmentsDone = o.segments - left.length;
      report();
      if (left.length === 0) break;
      await sleep(500, undefined, o.signal ? { signal: o.signal } : undefined).catch(() => undefined);
    }
  } finally {
    await group.stop();
  }
  await recordBackfilled(ddb, o.controlTable, table, Date.now());
  return progress;
}

/** A lease (or, in a dry run, only a signal): the backfill of one segment under it. */
type SegmentLease = Pick<LeaseHandle, 'signal'> & { assertValid?: () => void };

/** Stamp one segment page by page from its checkpoint, checkpointing each page after its updates. */
async function backfillSegment(
  o: BackfillOptions,
  keyNames: string[],
  segment: number,
  bucket: TokenBucket,
  progress: BackfillProgress,
  report: () => void,
  lease: SegmentLease,
): Promise<void> {
  // A dry run writes nothing, checkpoints neither: it reads the whole segment.
  const from = o.dryRun ? undefined : await checkpointOf(o, segment);
  if (from === 'done') return;
  const projection = stampProjection(o.settings, keyNames);
  const pageSize = o.pageSize ?? 500;
  let start = from;
  do {
    if (lease.signal.aborted) return;
    await bucket.take(pageSize, lease.signal);
    const page = await withRetry(
      () =>
        o.ddb.send(
          new ScanCommand({
            TableName: o.table,
            Segment: segment,
            TotalSegments: o.segments,
            ProjectionExpression: projection.expression,
            ExpressionAttributeNames: projection.names,
            Limit: pageSize,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      { ...STAMP_RETRY, signal: lease.signal },
    );
    const items = page.Items ?? [];
    bucket.refund(Math.max(0, pageSize - items.length));
    await stampItems(o, keyNames, items, bucket, progress, lease);
    start = page.LastEvaluatedKey;
    if (!o.dryRun) await saveCheckpoint(o, segment, start, lease);
    report();
  } while (start);
}

/** How a read or an update of the backfill is retried: throttles and lost connections, up to 8 times. */
const STAMP_RETRY = { retries: 8, initialDelayMs: 100, maxDelayMs: 10_000, isRetryable };

/** Where the segment's backfill resumes: after its last checkpointed page, at its start, or `done`. */
async function checkpointOf(
  o: BackfillOptions,
  segment: number,
): Promise<Record<string, AttributeValue> | undefined | 'done'> {
  const { Item } = await o.ddb.send(
    new GetItemCommand({
      TableName: o.controlTable,
      Key: checkpointKey(o.table, segment),
      ConsistentRead: true,
    }),
  );
  if (Item?.done?.BOOL === true) return 'done';
  return Item?.lastKey?.S !== undefined ? decodeKey(Item.lastKey.S) : undefined;
}

/** The segment's position after a page (`done` when it was the last), recorded while the lease is valid. */
async function saveCheckpoint(
  o: BackfillOptions,
  segment: number,
  next: Record<string, AttributeValue> | undefined,
  lease: SegmentLease,
): Promise<void> {
  lease.assertValid?.();
  await o.ddb.send(
    new PutItemCommand({
      TableName: o.controlTable,
      Item: {
        ...checkpointKey(o.table, segment),
        kind: { S: 'backfill' },
        done: { BOOL: next === undefined },
        ...(next ? { lastKey: { S: encodeKey(next) } } : {}),
        at: { N: String(Date.now()) },
      },
    }),
  );
}

/** The attributes a stamp needs: the key, the index's own attributes and what the policy reads. */
function stampProjection(settings: TableTtlSettings, keyNames: string[]) {
  const wanted = [
    ...new Set([
      ...keyNames,
      EXPIRY_SHARD_ATTRIBUTE,
      EXPIRY_DERIVED_ATTRIBUTE,
      ...relevantAttributes(settings),
    ]),
  ];
  const names: Record<string, string> = {};
  wanted.forEach((n, i) => (names[`#a${i}`] = n));
  return { expression: Object.keys(names).join(', '), names };
}

/** Stamp a page's items that need it (counted only, in a dry run), at most `concurrency` updates at once. */
async function stampItems(
  o: BackfillOptions,
  keyNames: string[],
  items: Item[],
  bucket: TokenBucket,
  progress: BackfillProgress,
  lease: SegmentLease,
): Promise<void> {
  progress.scanned += items.length;
  const updates = items.map((item) => planStamp(o.settings, keyNames, item));
  const todo = updates.filter((u): u is Planned => typeof u === 'object');
  progress.alreadyStamped += updates.filter((u) => u === 'stamped').length;
  progress.skipped += updates.filter((u) => u === 'skip').length;
  if (o.dryRun) {
    progress.stamped += todo.length;
    return;
  }
  await bucket.take(todo.length, lease.signal);
  await forEachLimited(todo, o.concurrency ?? 16, async (u) => {
    lease.assertValid?.();
    try {
      await withRetry(() => o.ddb.send(new UpdateItemCommand({ TableName: o.table, ...u })), {
        ...STAMP_RETRY,
        signal: lease.signal,
      });
      progress.stamped++;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) progress.conflicts++;
      // An index key of another type (a dynamodb-mode TTL stored as a string): the index cannot hold the item.
      else if ((err as { name?: string }).name === 'ValidationException') progress.skipped++;
      else throw err;
    }
  });
}

type Planned = {
  Key: Item;
  UpdateExpression: string;
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues: Record<string, AttributeValue>;
};

/** What one item needs: an update, nothing ('stamped'), or nothing because the index cannot hold it ('skip'). */
export function planStamp(
  settings: TableTtlSettings,
  keyNames: readonly string[],
  item: Item,
): Planned | 'stamped' | 'skip' {
  const shards = settings.expiryIndex?.shards ?? 1;
  const key: Item = {};
  for (const k of keyNames) if (item[k] !== undefined) key[k] = item[k];
  const shard = { N: String(expiryShardOf(key, shards)) };
  const names: Record<string, string> = { '#k': keyNames[0] ?? '', '#s': EXPIRY_SHARD_ATTRIBUTE };
  const values: Record<string, AttributeValue> = { ':s': shard };
  const policy = settings.policy;
  if (policy.mode !== 'cosmos') {
    if (item[EXPIRY_SHARD_ATTRIBUTE] !== undefined) return 'stamped';
    // Without a sort key of the index's type the item stays out of the index: no write. (A writer that gives it
    // one later goes through the stamp, which adds the shard.)
    const sort = expirySortKey(settings);
    const value = item[sort.attribute];
    if (value === undefined || (sort.type === 'N' ? value.N === undefined : value.S === undefined))
      return 'skip';
    return {
      Key: key,
      UpdateExpression: 'SET #s = :s',
      // Only if the item still exists (an update would create it) and no stamped write came first.
      ConditionExpression: 'attribute_exists(#k) AND attribute_not_exists(#s)',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
  }
  const lastWrite = item[policy.lastWriteAttribute];
  const lwDecimal = lastWrite?.N !== undefined ? parseDecimal(lastWrite.N) : undefined;
  const lastWriteMs = lwDecimal ? decimalToNumber(lwDecimal, 3) : NaN;
  const at = Number.isFinite(lastWriteMs)
    ? cosmosExpiryMs(policy.defaultTtl, item[policy.ttlAttribute], lastWriteMs)
    : undefined;
  if (at === undefined || lastWrite === undefined) return 'skip';
  if (item[EXPIRY_SHARD_ATTRIBUTE] !== undefined && item[EXPIRY_DERIVED_ATTRIBUTE] !== undefined)
    return 'stamped';
  names['#d'] = EXPIRY_DERIVED_ATTRIBUTE;
  names['#lw'] = policy.lastWriteAttribute;
  names['#ttl'] = policy.ttlAttribute;
  values[':d'] = { N: secondsText(at) };
  values[':lw'] = lastWrite;
  const ttl = item[policy.ttlAttribute];
  if (ttl !== undefined) values[':ttl'] = ttl;
  return {
    Key: key,
    UpdateExpression: 'SET #s = :s, #d = :d',
    // The derived expiry is only right for the TTL inputs read: a write since then (which stamped its own) wins.
    ConditionExpression: `attribute_exists(#k) AND #lw = :lw AND ${ttl !== undefined ? '#ttl = :ttl' : 'attribute_not_exists(#ttl)'}`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/** A Scan position as JSON (binary key values as base64). */
export function encodeKey(key: Record<string, AttributeValue>): string {
  return JSON.stringify(key, (_k, v: unknown) =>
    v instanceof Uint8Array ? { $b64: Buffer.from(v).toString('base64') } : v,
  );
}

export function decodeKey(text: string): Record<string, AttributeValue> {
  return JSON.parse(text, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && typeof (v as { $b64?: unknown }).$b64 === 'string'
      ? new Uint8Array(Buffer.from((v as { $b64: string }).$b64, 'base64'))
      : v,
  ) as Record<string, AttributeValue>;
}
