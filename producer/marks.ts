import {
  GetItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { createHash, randomBytes } from 'node:crypto';
import { withRetry } from '../core/retry';
import { INTERNAL_KEY, INTERNAL_SORT_KEY, ensureInternalTable } from '../core/tables';
import type { Item } from '../policy/types';
import { batchWriteAll, dynamoRetry } from './ddb-batch';
import { canonicalItem, fromJsonItem, toJsonItem, type JsonItem } from './image';

/**
 * The marks table (docs/decisions/0001-deletion-protocol.md): `pk = shard#<n>`, `sk = <table>#<canonical key>`
 * for mark rows, written by scanners (idempotent: a re-mark only refreshes markedAtMs). The producer holding a
 * shard's lease keeps its journal in the same table under `pk = journal#<n>` (./journal.ts).
 */

/** DynamoDB's sort key limit is 1024 bytes; longer canonical keys are replaced by their hash in the sk. */
const MAX_SK_BYTES = 1000;

export function ensureMarksTable(ddb: DynamoDBClient, marksTable: string): Promise<void> {
  return ensureInternalTable(ddb, marksTable, { sortKey: INTERNAL_SORT_KEY });
}

export function shardPk(shard: number): string {
  return `shard#${shard}`;
}

export function shardOf(table: string, canonicalKey: string, shards: number): number {
  const h = createHash('sha256').update(table).update('\0').update(canonicalKey).digest();
  return h.readUInt32BE(0) % shards;
}

export function markSk(table: string, canonicalKey: string): string {
  const sk = `${table}#${canonicalKey}`;
  if (Buffer.byteLength(sk) <= MAX_SK_BYTES) return sk;
  return `${table}#h:${createHash('sha256').update(canonicalKey).digest('hex')}`;
}

/** Where the rows of one item live. */
export interface MarkAddress {
  table: string;
  keys: Item;
  shard: number;
  sk: string;
}

export function addressOf(table: string, keys: Item, shards: number): MarkAddress {
  const ck = canonicalItem(keys);
  return { table, keys, shard: shardOf(table, ck, shards), sk: markSk(table, ck) };
}

export function rowKey(shard: number, sk: string): Record<string, AttributeValue> {
  return { [INTERNAL_KEY]: { S: shardPk(shard) }, [INTERNAL_SORT_KEY]: { S: sk } };
}

export interface Mark {
  address: MarkAddress;
  markedAtMs: number;
  expiresAtMs?: number;
}

/** A mark row read back from a shard. */
export function parseMarkRow(row: Record<string, AttributeValue>): Mark {
  const pk = row[INTERNAL_KEY]?.S ?? '';
  const sk = row[INTERNAL_SORT_KEY]?.S ?? '';
  const shard = Number(pk.slice('shard#'.length));
  const table = row.table?.S ?? '';
  const keys = fromJsonItem(JSON.parse(row.keys?.S ?? '{}') as JsonItem);
  const expires = row.expiresAtMs?.N;
  return {
    address: { table, keys, shard, sk },
    markedAtMs: Number(row.markedAtMs?.N ?? '0'),
    ...(expires !== undefined ? { expiresAtMs: Number(expires) } : {}),
  };
}

export function markToItem(m: Mark): Record<string, AttributeValue> {
  return {
    ...rowKey(m.address.shard, m.address.sk),
    kind: { S: 'mark' },
    table: { S: m.address.table },
    keys: { S: JSON.stringify(toJsonItem(m.address.keys)) },
    markedAtMs: { N: String(m.markedAtMs) },
    ...(m.expiresAtMs !== undefined ? { expiresAtMs: { N: String(m.expiresAtMs) } } : {}),
  };
}

/** Scanner side: write marks (idempotent; a re-mark only refreshes markedAtMs), then ring their shards' bells. */
export async function writeMarks(
  ddb: DynamoDBClient,
  marksTable: string,
  marks: readonly Mark[],
): Promise<void> {
  // BatchWriteItem refuses two requests for one key in a call; a page never repeats a key, but be safe.
  const unique = new Map(marks.map((m) => [`${m.address.shard}|${m.address.sk}`, m]));
  const requests: WriteRequest[] = [...unique.values()].map((m) => ({ PutRequest: { Item: markToItem(m) } }));
  await batchWriteAll(ddb, marksTable, requests);
  await ringBells(ddb, marksTable, [...new Set(marks.map((m) => m.address.shard))]);
}

/**
 * Doorbells: one row per shard (`pk = bell#<n>`), rewritten with a new token whenever marks were written to the
 * shard (after they are durable) or its table may be worked on again (a guard confirm). An idle producer checks
 * the bell, a single-key read, instead of querying the shard: on a LevelDB-backed server (dynalite) a Query of a
 * drained shard walks every deleted mark still in the log, and sixteen of those a second cost more server time than
 * the deletions themselves. A lost ring (a crash between the marks and the bell) only delays the marks until the
 * producer's periodic sweep (`producer.idleSweepMs`).
 */
export function bellKey(shard: number): Record<string, AttributeValue> {
  return { [INTERNAL_KEY]: { S: `bell#${shard}` }, [INTERNAL_SORT_KEY]: { S: '-' } };
}

export async function ringBells(
  ddb: DynamoDBClient,
  marksTable: string,
  shards: readonly number[],
): Promise<void> {
  if (shards.length === 0) return;
  const token = `${Date.now()}-${randomBytes(6).toString('hex')}`;
  await batchWriteAll(
    ddb,
    marksTable,
    shards.map((shard) => ({ PutRequest: { Item: { ...bellKey(shard), token: { S: token } } } })),
  );
}

/** The bell's current token ('' when it never rang). */
export async function readBell(ddb: DynamoDBClient, marksTable: string, shard: number): Promise<string> {
  const out = await withRetry(
    () => ddb.send(new GetItemCommand({ TableName: marksTable, Key: bellKey(shard), ConsistentRead: true })),
    dynamoRetry,
  );
  return out.Item?.token?.S ?? '';
}
