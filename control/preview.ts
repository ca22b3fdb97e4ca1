import {
  DescribeTableCommand,
  ResourceNotFoundException,
  ScanCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { NotFoundError } from '../core/errors';
import { evaluate, relevantAttributes } from '../policy';
import { EXPIRY_SHARD_ATTRIBUTE, expirySortKey } from '../policy/expiry-index';
import type { TableTtlSettings } from '../policy/settings';
import type { IgnoredReason, Item } from '../policy/types';

export interface PreviewOptions {
  /** Count items that are not expired yet but expire within this many seconds. */
  withinSeconds: number;
  /** Read at most this many items. */
  limit: number;
  nowMs: number;
  /** Items per Scan page (tests use small pages to exercise pagination). */
  pageSize?: number;
}

export interface PreviewResult {
  table: string;
  evaluatedAt: number;
  withinSeconds: number;
  scanned: number;
  /** Items a pass right now would delete. */
  expiredNow: number;
  /** Items not expired yet that expire within `withinSeconds` (disjoint from expiredNow). */
  expiringWithin: number;
  /** Keys (DynamoDB JSON) of up to 10 items among expiredNow and expiringWithin, in scan order. */
  sampleKeys: Item[];
  ignored: Record<IgnoredReason, number>;
  /** Items whose TTL looks like epoch milliseconds (a likely bug: they expire thousands of years late). */
  looksLikeMillis: number;
  /** Items kept by the legal-hold attribute. */
  held: number;
  /** Items without the TTL attribute at all: never deleted (often a writer that forgot to set it). */
  withoutTtlAttribute: number;
  /** True when `limit` stopped the scan before the end of the table. */
  truncated: boolean;
  /**
   * Index mode only: expired items that are not in the expiry index (no shard or sort key), which only the
   * safety-net sweep finds: some writer lacks the write-stamp middleware (or the backfill has not run).
   */
  notInExpiryIndex?: number;
}

const SAMPLE_KEYS = 10;

/**
 * A read-only preview of what TTL would do to a table: scans (bounded by `limit`) and runs every
 * item through the same policy engine the scanner uses. Deletes nothing, writes nothing.
 */
export async function previewExpiring(
  ddb: DynamoDBClient,
  table: string,
  settings: TableTtlSettings,
  options: PreviewOptions,
): Promise<PreviewResult> {
  const keyNames = await keyAttributes(ddb, table);
  // Read only what the verdict and the sample need.
  const indexKeys = settings.expiryIndex ? [EXPIRY_SHARD_ATTRIBUTE, expirySortKey(settings).attribute] : [];
  const attributes = [...new Set([...keyNames, ...relevantAttributes(settings), ...indexKeys])];
  const names: Record<string, string> = {};
  attributes.forEach((a, i) => (names[`#a${i}`] = a));

  const result: PreviewResult = {
    table,
    evaluatedAt: options.nowMs,
    withinSeconds: options.withinSeconds,
    scanned: 0,
    expiredNow: 0,
    expiringWithin: 0,
    sampleKeys: [],
    ignored: { 'wrong-type': 0, 'older-than-5-years': 0, malformed: 0, 'item-ttl-null': 0 },
    looksLikeMillis: 0,
    held: 0,
    withoutTtlAttribute: 0,
    truncated: false,
    ...(settings.expiryIndex ? { notInExpiryIndex: 0 } : {}),
  };
  const horizon = options.nowMs + options.withinSeconds * 1000;
  const pageSize = options.pageSize ?? 1000;
  let start: Item | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({
        TableName: table,
        Limit: Math.min(pageSize, options.limit - result.scanned),
        ProjectionExpression: Object.keys(names).join(', '),
        ExpressionAttributeNames: names,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      result.scanned++;
      const verdict = evaluate(settings, item, options.nowMs);
      let sample = false;
      switch (verdict.kind) {
        case 'ignored':
          result.ignored[verdict.reason]++;
          break;
        case 'held':
          result.held++;
          break;
        case 'not-subject':
          if (verdict.reason === 'no-attribute') result.withoutTtlAttribute++;
          break;
        case 'expires':
          if (verdict.looksLikeMillis) result.looksLikeMillis++;
          if (verdict.expired) {
            result.expiredNow++;
            if (result.notInExpiryIndex !== undefined && indexKeys.some((k) => item[k] === undefined))
              result.notInExpiryIndex++;
            sample = true;
          } else if (verdict.expiresAtMs <= horizon) {
            result.expiringWithin++;
            sample = true;
          }
          break;
        default:
          break;
      }
      if (sample && result.sampleKeys.length < SAMPLE_KEYS) result.sampleKeys.push(pickKey(item, keyNames));
    }
    start = page.LastEvaluatedKey;
  } while (start && result.scanned < options.limit);
  result.truncated = start !== undefined;
  return result;
}

async function keyAttributes(ddb: DynamoDBClient, table: string): Promise<string[]> {
  try {
    const { Table } = await ddb.send(new DescribeTableCommand({ TableName: table }));
    return (Table?.KeySchema ?? [])
      .map((k) => k.AttributeName)
      .filter((n): n is string => typeof n === 'string');
  } catch (err) {
    if (err instanceof ResourceNotFoundException) {
      throw new NotFoundError(`Requested resource not found: Table: ${table} not found`);
    }
    throw err;
  }
}

function pickKey(item: Item, keyNames: string[]): Item {
  const key: Item = {};
  for (const name of keyNames) {
    const v = item[name];
    if (v) key[name] = v;
  }
  return key;
}
