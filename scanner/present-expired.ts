import {
  GetItemCommand,
  QueryCommand,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../core/errors';
import { withRetry } from '../core/retry';
import { relevantAttributes } from '../policy';
import {
  EXPIRY_INDEX_NAME,
  EXPIRY_SHARD_ATTRIBUTE,
  expirySortKey,
  expiryWindowRange,
} from '../policy/expiry-index';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import { presentVerdict, type TtlWindow } from '../policy/window';
import { dynamoRetry } from '../pipeline/ddb-batch';
import { keyIdentity, pick } from '../pipeline/image';
import { KeySchemas } from './key-schema';
import { TokenBucket } from './rate-limiter';

/**
 * `ttlstream audit`: items whose TTL passed inside a window and that still exist. Read through the expiry index
 * (a Query per shard over the window's expiries) when the table has an ACTIVE one, else by a Scan; both under a
 * read-rate ceiling (items per second, adaptive on throttling like the scanner's). Every candidate is read again
 * with a consistent GetItem and judged again, so an item the pipeline deleted a moment ago (the index and a Scan
 * are eventually consistent) is not reported as present. Read-only.
 */

export interface PresentExpiredOptions {
  table: string;
  settings: TableTtlSettings;
  window: TtlWindow;
  nowMs: number;
  /** `index`: the expiry index must be ACTIVE (the caller checks); `scan`: the whole table. */
  via: 'index' | 'scan';
  /** Items read per second at most. */
  ratePerSec: number;
  pageSize?: number;
  /** Items read so far, after every page. */
  onRead?(items: number): void;
}

export interface PresentExpired {
  /** The key attributes of the item. */
  keys: Item;
  expiresAtMs: number;
  held: boolean;
}

export async function findPresentExpired(
  ddb: DynamoDBClient,
  options: PresentExpiredOptions,
): Promise<{ items: PresentExpired[]; read: number }> {
  const search = startSearch(ddb, options, await new KeySchemas(ddb).get(options.table));
  // Expiries up to now only: a window reaching into the future holds nothing overdue yet.
  const end = Math.min(options.window.toMs, options.nowMs + 1);
  if (end > options.window.fromMs) {
    if (options.via === 'index') await queryIndex(search, end);
    else await scanAll(search);
  }
  return { items: await confirmPresent(search), read: search.read };
}

/** A search under way: how it reads (projection, rate, page size) and the candidates found so far, by key. */
interface Search {
  ddb: DynamoDBClient;
  options: PresentExpiredOptions;
  keyNames: string[];
  projection: string;
  names: Record<string, string>;
  bucket: TokenBucket;
  pageSize: number;
  candidates: Map<string, Item>;
  read: number;
}

function startSearch(ddb: DynamoDBClient, options: PresentExpiredOptions, keyNames: string[]): Search {
  const attributes = [...new Set([...keyNames, ...relevantAttributes(options.settings)])];
  const names: Record<string, string> = {};
  attributes.forEach((a, i) => (names[`#a${i}`] = a));
  return {
    ddb,
    options,
    keyNames,
    projection: Object.keys(names).join(', '),
    names,
    bucket: new TokenBucket({ ratePerSec: options.ratePerSec }),
    // A page never asks for more than a second's worth of reads.
    pageSize: options.pageSize ?? Math.max(1, Math.min(500, Math.floor(options.ratePerSec))),
    candidates: new Map(),
    read: 0,
  };
}

type Page = { Items?: Item[]; ScannedCount?: number; LastEvaluatedKey?: Record<string, AttributeValue> };

/** Every page `send` returns, paced by the search's rate; each page's items that look present and expired are kept. */
async function readPages(
  search: Search,
  send: (start?: Record<string, AttributeValue>) => Promise<Page>,
): Promise<void> {
  const { bucket, pageSize, options } = search;
  let start: Record<string, AttributeValue> | undefined;
  do {
    await bucket.take(pageSize);
    const page = await withRetry(() => send(start), dynamoRetry);
    bucket.refund(Math.max(0, pageSize - (page.ScannedCount ?? page.Items?.length ?? 0)));
    for (const item of page.Items ?? []) {
      if (presentVerdict(options.settings, item, options.window, options.nowMs) === null) continue;
      const keys = pick(item, search.keyNames);
      search.candidates.set(keyIdentity(keys), keys);
    }
    search.read += page.Items?.length ?? 0;
    options.onRead?.(search.read);
    start = page.LastEvaluatedKey;
  } while (start);
}

/** A Query of each shard of the expiry index over the window's expiries (up to `end`). */
async function queryIndex(search: Search, end: number): Promise<void> {
  const { ddb, options } = search;
  const shards = options.settings.expiryIndex?.shards;
  const range = expiryWindowRange(options.settings, options.window.fromMs, end);
  if (shards === undefined)
    throw new ValidationError(`table ${options.table} has no expiryIndex in its TTL settings`);
  if (!range) return;
  const sort = `#s`;
  for (let shard = 0; shard < shards; shard++) {
    await readPages(search, (start) =>
      ddb.send(
        new QueryCommand({
          TableName: options.table,
          IndexName: EXPIRY_INDEX_NAME,
          KeyConditionExpression: `#shard = :shard AND ${sort} BETWEEN :low AND :high`,
          ProjectionExpression: search.projection,
          ExpressionAttributeNames: {
            ...search.names,
            '#shard': EXPIRY_SHARD_ATTRIBUTE,
            [sort]: expirySortKey(options.settings).attribute,
          },
          ExpressionAttributeValues: {
            ':shard': { N: String(shard) },
            ':low': range.low,
            ':high': range.high,
          },
          Limit: search.pageSize,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
  }
}

/** A Scan of the whole table. */
async function scanAll(search: Search): Promise<void> {
  await readPages(search, (start) =>
    search.ddb.send(
      new ScanCommand({
        TableName: search.options.table,
        ProjectionExpression: search.projection,
        ExpressionAttributeNames: search.names,
        Limit: search.pageSize,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    ),
  );
}

/** Each candidate read again (a consistent GetItem) and judged again: the ones still present and expired. */
async function confirmPresent(search: Search): Promise<PresentExpired[]> {
  const { ddb, options } = search;
  const items: PresentExpired[] = [];
  for (const keys of search.candidates.values()) {
    await search.bucket.take(1);
    const { Item: now } = await withRetry(
      () =>
        ddb.send(
          new GetItemCommand({
            TableName: options.table,
            Key: keys,
            ConsistentRead: true,
            ProjectionExpression: search.projection,
            ExpressionAttributeNames: search.names,
          }),
        ),
      dynamoRetry,
    );
    const verdict = now ? presentVerdict(options.settings, now, options.window, options.nowMs) : null;
    if (verdict) items.push({ keys, expiresAtMs: verdict.expiresAtMs, held: verdict.kind === 'held' });
  }
  return items;
}
