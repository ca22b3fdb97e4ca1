import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Progress } from '../kit/progress';

/**
 * Drives a progress bar from the Scan pages a library function reads through `ddb`, for functions
 * that have no progress callback of their own (the preview). The total is the table's approximate
 * ItemCount, capped by the caller's limit. Returns a function that detaches the counter.
 */
export async function trackScanProgress(
  ddb: DynamoDBClient,
  table: string,
  limit: number,
  progress: Progress,
): Promise<() => void> {
  let total = limit;
  try {
    const { Table } = await ddb.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.ItemCount !== undefined) total = Math.min(limit, Math.max(1, Table.ItemCount));
  } catch {
    // The preview itself reports a missing table; the bar just has no good total.
  }
  let scanned = 0;
  const name = `ttlstream-scan-progress-${table}`;
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'ScanCommand') {
        scanned += (result.output as { ScannedCount?: number }).ScannedCount ?? 0;
        progress.update(scanned, Math.max(total, scanned));
      }
      return result;
    },
    { step: 'initialize', name },
  );
  return () => {
    ddb.middlewareStack.remove(name);
    progress.stop();
  };
}
