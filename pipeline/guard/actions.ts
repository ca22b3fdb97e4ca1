import { setTimeout as sleep } from 'node:timers/promises';
import {
  QueryCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { ProducerSettings, TablesSettings } from '../../core/config';
import { withRetry } from '../../core/retry';
import { INTERNAL_KEY, INTERNAL_SORT_KEY } from '../../core/tables';
import { batchWriteAll, dynamoRetry } from '../ddb-batch';
import { ensureMarksTable, parseMarkRow, ringBells, shardPk } from '../marks';
import { GuardStore, type GuardRecord } from './store';

/**
 * The guard's operator actions as plain functions, shared by the REST routes (control/api/routes/guard.ts) and
 * the CLI.
 */
export interface GuardDeps {
  ddb: DynamoDBClient;
  options: GuardActionOptions;
}

/** The guard actions' options: the tables they read and write, and the mark shards a confirm wakes or a cancel sweeps. */
export interface GuardActionOptions {
  /** `tables.control`: the guard rows. */
  controlTable: string;
  /** `tables.marks`: the marks and doorbells. */
  marksTable: string;
  /** `producer.shards`. */
  markShards: number;
}

export function guardActionOptionsFrom(config: {
  tables: Pick<TablesSettings, 'control' | 'marks'>;
  producer: Pick<ProducerSettings, 'shards'>;
}): GuardActionOptions {
  return {
    controlTable: config.tables.control,
    marksTable: config.tables.marks,
    markShards: config.producer.shards,
  };
}

/** How long a scanner may take from reading the guard to having written a page's marks. */
const CANCEL_SETTLE_MS = 1000;

function storeOf(deps: GuardDeps): GuardStore {
  return new GuardStore(deps.ddb, deps.options.controlTable);
}

export function getGuard(deps: GuardDeps, table: string): Promise<GuardRecord> {
  return storeOf(deps).get(table);
}

/** Resume deletions for the table; the guard stays quiet for this episode. */
export async function confirmGuard(deps: GuardDeps, table: string, by: string): Promise<GuardRecord> {
  const record = await storeOf(deps).confirm(table, by);
  // The paused table's marks sit in idle shards: wake their producers now rather than at their next periodic sweep.
  await ensureMarksTable(deps.ddb, deps.options.marksTable);
  await ringBells(
    deps.ddb,
    deps.options.marksTable,
    Array.from({ length: deps.options.markShards }, (_, i) => i),
  );
  return record;
}

/**
 * Keep the table paused and discard its pending marks (the producers' journals stay: an intent may stand for a record already
 * on Kafka, and only the producer's reconciliation may retract or complete it). The scanner does not mark the table
 * again until a confirm.
 */
export async function cancelGuard(
  deps: GuardDeps,
  table: string,
  by: string,
): Promise<{ guard: GuardRecord; discardedMarks: number }> {
  const guard = await storeOf(deps).cancel(table, by);
  let discardedMarks = await discardMarks(deps, table);
  // A scanner page that read the guard just before the cancel may still be writing its marks: sweep again.
  await sleep(CANCEL_SETTLE_MS);
  discardedMarks += await discardMarks(deps, table);
  return { guard, discardedMarks };
}

/** Delete every mark row of `table` across all shards (the producers' journals are another partition); returns the marks. */
export async function discardMarks(deps: GuardDeps, table: string): Promise<number> {
  const marksTable = deps.options.marksTable;
  await ensureMarksTable(deps.ddb, marksTable);
  let discarded = 0;
  for (let shard = 0; shard < deps.options.markShards; shard++) {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await withRetry(
        () =>
          deps.ddb.send(
            new QueryCommand({
              TableName: marksTable,
              KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
              ExpressionAttributeNames: { '#pk': INTERNAL_KEY, '#sk': INTERNAL_SORT_KEY },
              ExpressionAttributeValues: { ':pk': { S: shardPk(shard) }, ':prefix': { S: `${table}#` } },
              ConsistentRead: true,
              ...(start ? { ExclusiveStartKey: start } : {}),
            }),
          ),
        dynamoRetry,
      );
      const deletes: WriteRequest[] = (page.Items ?? []).map((row) => ({
        DeleteRequest: {
          Key: {
            [INTERNAL_KEY]: row[INTERNAL_KEY] as AttributeValue,
            [INTERNAL_SORT_KEY]: row[INTERNAL_SORT_KEY] as AttributeValue,
          },
        },
      }));
      await batchWriteAll(deps.ddb, marksTable, deletes);
      for (const row of page.Items ?? []) discarded += parseMarkRow(row).length;
      start = page.LastEvaluatedKey;
    } while (start);
  }
  return discarded;
}
