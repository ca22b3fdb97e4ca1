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

/** BatchWriteItem in chunks of 25, in parallel, re-sending unprocessed items with back-off until all are written. */
export async function batchWriteAll(
  ddb: DynamoDBClient,
  table: string,
  requests: readonly WriteRequest[],
): Promise<void> {
  await Promise.all(
    chunks(requests, WRITE_CHUNK).map(async (chunk) => {
      let pending: WriteRequest[] = chunk;
      for (let round = 0; pending.length > 0; round++) {
        if (round >= MAX_ROUNDS)
          throw new RetryableError(`BatchWriteItem on ${table}: ${pending.length} items unprocessed`);
        if (round > 0) await sleep(backoffMs(round, UNPROCESSED_BACKOFF));
        const out = await withRetry(
          () => ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } })),
          dynamoRetry,
        );
        pending = out.UnprocessedItems?.[table] ?? [];
      }
    }),
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
  await Promise.all(
    chunks(keys, GET_CHUNK).map(async (chunk) => {
      let pending: Key[] = chunk;
      for (let round = 0; pending.length > 0; round++) {
        if (round >= MAX_ROUNDS)
          throw new RetryableError(`BatchGetItem on ${table}: ${pending.length} keys unprocessed`);
        if (round > 0) await sleep(backoffMs(round, UNPROCESSED_BACKOFF));
        const out = await withRetry(
          () =>
            ddb.send(
              new BatchGetItemCommand({
                RequestItems: {
                  [table]: {
                    Keys: pending,
                    ConsistentRead: options.consistent ?? true,
                    ...(options.projection
                      ? {
                          ProjectionExpression: options.projection.expression,
                          ExpressionAttributeNames: options.projection.names,
                        }
                      : {}),
                  },
                },
              }),
            ),
          dynamoRetry,
        );
        found.push(...(out.Responses?.[table] ?? []));
        pending = (out.UnprocessedKeys?.[table]?.Keys ?? []) as Key[];
      }
    }),
  );
  return found;
}
