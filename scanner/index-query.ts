import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { LeaseHandle } from '../core/leases';
import { metrics } from '../core/metrics';
import { relevantAttributes } from '../policy';
import {
  EXPIRY_INDEX_NAME,
  EXPIRY_SHARD_ATTRIBUTE,
  expiryQueryRange,
  expirySortKey,
} from '../policy/expiry-index';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import { readPage, settleRate } from './page-read';
import type { ScannerContext } from './segment-worker';

export interface ExpiryPage {
  items: Item[];
  /** Where the next page starts; undefined at the shard's end. */
  next: Record<string, AttributeValue> | undefined;
}

/**
 * The pages of one shard of a table's expiry index in the range due now (`shard = n AND expiry ≤ now`, policy's
 * `expiryQueryRange`), from `from` to the end, paced by the table's token bucket and retried on throttling. Only
 * the table keys, the index keys (for a cursor) and what the policy reads leave the server. Ends early when the
 * lease is lost; nothing when the policy has no range.
 */
export async function* expiryPages(
  ctx: ScannerContext,
  table: string,
  shard: number,
  settings: TableTtlSettings,
  from: Record<string, AttributeValue> | undefined,
  lease: LeaseHandle,
  /** Items per page (default `scanner.pageSize`). */
  pageLimit?: number,
): AsyncGenerator<ExpiryPage> {
  const keyNames = await ctx.keySchemas.get(table);
  const sort = expirySortKey(settings);
  const range = expiryQueryRange(settings, ctx.now());
  if (!range) return;
  const wanted = [
    ...new Set([...keyNames, EXPIRY_SHARD_ATTRIBUTE, sort.attribute, ...relevantAttributes(settings)]),
  ];
  const names: Record<string, string> = {};
  wanted.forEach((n, i) => (names[`#a${i}`] = n));
  const nameOf = (attribute: string) => `#a${wanted.indexOf(attribute)}`;
  const condition =
    range.low === undefined
      ? `${nameOf(EXPIRY_SHARD_ATTRIBUTE)} = :shard AND ${nameOf(sort.attribute)} <= :high`
      : `${nameOf(EXPIRY_SHARD_ATTRIBUTE)} = :shard AND ${nameOf(sort.attribute)} BETWEEN :low AND :high`;
  const values: Record<string, AttributeValue> = {
    ':shard': { N: String(shard) },
    ':high': range.high,
    ...(range.low !== undefined ? { ':low': range.low } : {}),
  };
  const bucket = ctx.bucket(table);
  let start = from;
  do {
    if (lease.signal.aborted) return;
    // Charged after the page, by what it read: most polls of a shard read nothing, and taking a page's worth up
    // front would make many shards' idle polls wait on each other's refunds.
    await bucket.take(1, lease.signal);
    const { page, throttled } = await readPage(
      ctx.ddb,
      () =>
        new QueryCommand({
          TableName: table,
          IndexName: EXPIRY_INDEX_NAME,
          KeyConditionExpression: condition,
          ProjectionExpression: Object.keys(names).join(', '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          Limit: pageLimit ?? ctx.options.pageSize,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      bucket,
      lease.signal,
    );
    const items = page.Items ?? [];
    await bucket.take(Math.max(0, (page.ScannedCount ?? items.length) - 1), lease.signal);
    settleRate(bucket, throttled);
    metrics.itemsQueried.inc({ table }, items.length);
    start = page.LastEvaluatedKey;
    yield { items, next: start };
  } while (start);
}
