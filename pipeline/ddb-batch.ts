import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { RetryableError } from '../core/errors';
import { backoffMs, isRetryable, withRetry } from '../core/retry';

type Key = Record<string, AttributeValue>;

const WRITE_CHUNK = 25;
const GET_CHUNK = 100;
/** Unprocessed items are normal under load; give up (and let the caller's batch retry) only after this many rounds. */
const MAX_ROUNDS = 12;
/** The wait before re-sending what a round left unprocessed (round 1 waits at most 50 ms, later ones up to 2 s). */
const UNPROCESSED_BACKOFF = { initialDelayMs: 25, maxDelayMs: 2000 };

export const dynamoRetry = {
  retries: 6,
  initialDelayMs: 50,
  maxDelayMs: 2000,
  isRetryable,
};

function chunks<T>(xs: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}

/**
 * Sends `first`, then what each answer left unprocessed, until nothing is left: each call retried as a DynamoDB call
 * (`dynamoRetry`), each later round after `backoffMs`. Unprocessed items are normal under load; after MAX_ROUNDS
 * rounds it gives up with a RetryableError (the caller's batch is retried). The one loop over DynamoDB's unprocessed
 * items and keys: `npm run lint` refuses `UnprocessedItems`/`UnprocessedKeys` anywhere else in the product.
 */
async function untilProcessed<T>(
  unprocessed: (left: number) => string,
  first: T[],
  send: (pending: T[]) => Promise<T[]>,
): Promise<void> {
  let pending = first;
  for (let round = 0; pending.length > 0; round++) {
    if (round >= MAX_ROUNDS) throw new RetryableError(unprocessed(pending.length));
    if (round > 0) await sleep(backoffMs(round, UNPROCESSED_BACKOFF));
    const sending = pending;
    pending = await withRetry(() => send(sending), dynamoRetry);
  }
}

/** BatchWriteItem in chunks of 25, in parallel, re-sending unprocessed items with back-off until all are written. */
export async function batchWriteAll(
  ddb: DynamoDBClient,
  table: string,
  requests: readonly WriteRequest[],
): Promise<void> {
  await Promise.all(
    chunks(requests, WRITE_CHUNK).map((chunk) =>
      untilProcessed(
        (left) => `BatchWriteItem on ${table}: ${left} items unprocessed`,
        chunk,
        async (pending) => {
          const out = await ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
          return out.UnprocessedItems?.[table] ?? [];
        },
      ),
    ),
  );
}

/** BatchGetItem in chunks of 100, in parallel, following UnprocessedKeys. Returns the items found (any order). */
export async function batchGetAll(
  ddb: DynamoDBClient,
  table: string,
  keys: readonly Key[],
  options: { consistent?: boolean; projection?: { expression: string; names: Record<string, string> } } = {},
): Promise<Array<Record<string, AttributeValue>>> {
  const found: Array<Record<string, AttributeValue>> = [];
  const projection = options.projection
    ? {
        ProjectionExpression: options.projection.expression,
        ExpressionAttributeNames: options.projection.names,
      }
    : {};
  await Promise.all(
    chunks(keys, GET_CHUNK).map((chunk) =>
      untilProcessed(
        (left) => `BatchGetItem on ${table}: ${left} keys unprocessed`,
        chunk,
        async (pending) => {
          const out = await ddb.send(
            new BatchGetItemCommand({
              RequestItems: {
                [table]: { Keys: pending, ConsistentRead: options.consistent ?? true, ...projection },
              },
            }),
          );
          found.push(...(out.Responses?.[table] ?? []));
          return (out.UnprocessedKeys?.[table]?.Keys ?? []) as Key[];
        },
      ),
    ),
  );
  return found;
}
