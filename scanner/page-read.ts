import type {
  DynamoDBClient,
  QueryCommand,
  QueryCommandOutput,
  ScanCommand,
  ScanCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { isRetryable, watchThrottling, withRetry } from '../core/retry';
import type { TokenBucket } from './rate-limiter';

export interface PageRead<O> {
  page: O;
  /** The server throttled this read, also when the SDK retried it on its own: settle the bucket with it. */
  throttled: boolean;
}

/**
 * One page read (a Scan of a segment or a Query of an index shard) under the table's read-rate bucket, retried
 * with back-off. Only the server's throttling lowers the rate; a refused or broken connection (a DynamoDB restart)
 * is retried but says nothing about the server's capacity. The caller charges the bucket for what the page read
 * (how differs: a scan takes a page up front, an index poll mostly reads nothing), then calls `settleRate`.
 */
export function readPage(
  ddb: DynamoDBClient,
  command: () => ScanCommand,
  bucket: TokenBucket,
  signal: AbortSignal,
): Promise<PageRead<ScanCommandOutput>>;
export function readPage(
  ddb: DynamoDBClient,
  command: () => QueryCommand,
  bucket: TokenBucket,
  signal: AbortSignal,
): Promise<PageRead<QueryCommandOutput>>;
export async function readPage(
  ddb: DynamoDBClient,
  command: () => ScanCommand | QueryCommand,
  bucket: TokenBucket,
  signal: AbortSignal,
): Promise<PageRead<ScanCommandOutput | QueryCommandOutput>> {
  let throttled = false;
  const send = ddb.send.bind(ddb) as (
    c: ScanCommand | QueryCommand,
  ) => Promise<ScanCommandOutput | QueryCommandOutput>;
  const page = await withRetry(() => send(watchThrottling(command(), () => (throttled = true))), {
    retries: 8,
    initialDelayMs: 100,
    maxDelayMs: 10_000,
    isRetryable,
    onRetry: () => {
      if (throttled) bucket.throttled();
      throttled = false;
    },
    signal,
  });
  return { page, throttled };
}

/** After the page is charged: a throttled read lowers the bucket's rate, a clean one lets it recover. */
export function settleRate(bucket: TokenBucket, throttled: boolean): void {
  if (throttled) bucket.throttled();
  else bucket.succeeded();
}
