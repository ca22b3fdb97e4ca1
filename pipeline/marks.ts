import {
  GetItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { hash, randomBytes } from 'node:crypto';
import { withRetry } from '../core/retry';
import { INTERNAL_KEY, INTERNAL_SORT_KEY, ensureInternalTable } from '../core/tables';
import type { Item } from '../policy/types';
import { batchGetAll, batchWriteAll, dynamoRetry } from './ddb-batch';
import { fromJsonItem, keyIdentity, toJsonItem, type JsonItem } from './image';

/**
 * The marks table (docs/decisions/0001-deletion-protocol.md). Scanners write marks in *mark rows*: one row per shard
 * and write (`pk = shard#<n>`, `sk = <table>#@<time>-<random>`) listing the expired items of the shard that a
 * scanner gathered over its pages (up to about a producer batch, scanner/mark-writer.ts), because one row for many
 * marks costs the server a fraction of one write per mark. An item's
 * identity within a shard is still its `markSk` (`<table>#<keyIdentity>`): batches de-duplicate marks by it and
 * the producer's journal (`pk = journal#<n>`, producer/journal.ts) records deletions by it. A row is deleted once all its
 * marks are finished, or replaced by a row of the unfinished ones.
 */

/** DynamoDB's sort key limit is 1024 bytes; longer canonical keys are replaced by their hash in the sk. */
const MAX_SK_BYTES = 1000;

export function ensureMarksTable(ddb: DynamoDBClient, marksTable: string): Promise<void> {
  return ensureInternalTable(ddb, marksTable, { sortKey: INTERNAL_SORT_KEY });
}

export function shardPk(shard: number): string {
  return `shard#${shard}`;
}

/** The partition of a shard's journal (producer/journal.ts), beside its marks. */
export function journalPk(shard: number): string {
  return `journal#${shard}`;
}

export function shardOf(table: string, canonicalKey: string, shards: number): number {
  // One-shot crypto.hash: the same digest as createHash().update()…, without a Hash object per mark.
  const h = hash('sha256', `${table}\0${canonicalKey}`, 'buffer');
  return h.readUInt32BE(0) % shards;
}

export function markSk(table: string, canonicalKey: string): string {
  const sk = `${table}#${canonicalKey}`;
  if (Buffer.byteLength(sk) <= MAX_SK_BYTES) return sk;
  return `${table}#h:${hash('sha256', canonicalKey, 'hex')}`;
}

/** Where the rows of one item live. */
export interface MarkAddress {
  table: string;
  keys: Item;
  shard: number;
  sk: string;
}

export function addressOf(table: string, keys: Item, shards: number): MarkAddress {
  const ck = keyIdentity(keys);
  return { table, keys, shard: shardOf(table, ck, shards), sk: markSk(table, ck) };
}

export function rowKey(shard: number, sk: string): Record<string, AttributeValue> {
  return { [INTERNAL_KEY]: { S: shardPk(shard) }, [INTERNAL_SORT_KEY]: { S: sk } };
}

export interface Mark {
  address: MarkAddress;
  markedAtMs: number;
  expiresAtMs?: number;
  /** The sk of the mark row it was read from. */
  row?: string;
}

const ROW_MARKER = '#@';
/** Mark-list JSON per row, far below DynamoDB's 400 KB item limit (keys can be up to 2 KB each). */
const MAX_ROW_JSON_BYTES = 200 * 1024;

export function newRowSk(table: string, nowMs: number): string {
  return `${table}${ROW_MARKER}${String(Math.floor(nowMs)).padStart(15, '0')}-${randomBytes(6).toString('hex')}`;
}

/** The mark rows for `marks` (all of one table): one per shard, more if a shard's list is very large. Pure. */
export function markRows(
  table: string,
  marks: readonly Mark[],
  nowMs: number,
): Array<Record<string, AttributeValue>> {
  const byShard = new Map<number, string[][]>();
  const sizes = new Map<number, number>();
  for (const m of marks) {
    const entry = JSON.stringify([toJsonItem(m.address.keys), m.expiresAtMs ?? null]);
    const rows = byShard.get(m.address.shard) ?? [[]];
    let size = sizes.get(m.address.shard) ?? 0;
    if (size + entry.length > MAX_ROW_JSON_BYTES && (rows[rows.length - 1] as string[]).length > 0) {
      rows.push([]);
      size = 0;
    }
    (rows[rows.length - 1] as string[]).push(entry);
    sizes.set(m.address.shard, size + entry.length + 1);
    byShard.set(m.address.shard, rows);
  }
  const out: Array<Record<string, AttributeValue>> = [];
  for (const [shard, rows] of byShard) {
    for (const entries of rows) {
      out.push({
        ...rowKey(shard, newRowSk(table, nowMs)),
        kind: { S: 'marks' },
        table: { S: table },
        markedAtMs: { N: String(nowMs) },
        marks: { S: `[${entries.join(',')}]` },
      });
    }
  }
  return out;
}

/** The marks of a row read back from a shard (also a single-mark row of the earlier per-item layout). */
export function parseMarkRow(row: Record<string, AttributeValue>): Mark[] {
  const pk = row[INTERNAL_KEY]?.S ?? '';
  const rowSk = row[INTERNAL_SORT_KEY]?.S ?? '';
  const shard = Number(pk.slice('shard#'.length));
  const table = row.table?.S ?? '';
  const markedAtMs = Number(row.markedAtMs?.N ?? '0');
  const mark = (keys: Item, expiresAtMs: number | null | undefined): Mark => ({
    address: { table, keys, shard, sk: markSk(table, keyIdentity(keys)) },
    markedAtMs,
    ...(expiresAtMs !== null && expiresAtMs !== undefined ? { expiresAtMs } : {}),
    row: rowSk,
  });
  if (row.marks?.S !== undefined) {
    const list = JSON.parse(row.marks.S) as Array<[JsonItem, number | null]>;
    return list.map(([keys, expiresAtMs]) => mark(fromJsonItem(keys), expiresAtMs));
  }
  const expires = row.expiresAtMs?.N;
  return [
    mark(
      fromJsonItem(JSON.parse(row.keys?.S ?? '{}') as JsonItem),
      expires === undefined ? null : Number(expires),
    ),
  ];
}

/** The marks of the given mark rows of a shard (consistent reads); rows already gone are simply not there. */
export async function readMarkRows(
  ddb: DynamoDBClient,
  marksTable: string,
  shard: number,
  sks: readonly string[],
): Promise<Mark[]> {
  if (sks.length === 0) return [];
  const rows = await batchGetAll(
    ddb,
    marksTable,
    [...new Set(sks)].map((sk) => rowKey(shard, sk)),
    { consistent: true },
  );
  return rows.flatMap(parseMarkRow);
}

/**
 * Write marks (all of one table) as mark rows; they are durable when this resolves. A mark written twice (a
 * re-mark) is harmless: the producer de-duplicates within a batch, and finds the item gone or judged the second
 * time. Returns the shards written to (whose bells should ring).
 */
export async function putMarkRows(
  ddb: DynamoDBClient,
  marksTable: string,
  table: string,
  marks: readonly Mark[],
  nowMs: number = Date.now(),
): Promise<number[]> {
  if (marks.length === 0) return [];
  const requests: WriteRequest[] = markRows(table, marks, nowMs).map((Item) => ({ PutRequest: { Item } }));
  await batchWriteAll(ddb, marksTable, requests);
  return [...new Set(marks.map((m) => m.address.shard))];
}

/**
 * Write marks as mark rows, then ring their shards' bells at once (tools and tests; the scanner gathers its marks
 * and throttles its bells, scanner/mark-writer.ts).
 */
export async function writeMarks(
  ddb: DynamoDBClient,
  marksTable: string,
  table: string,
  marks: readonly Mark[],
  nowMs: number = Date.now(),
): Promise<void> {
  await ringBells(ddb, marksTable, await putMarkRows(ddb, marksTable, table, marks, nowMs));
}

/**
 * Doorbells: one row per shard (`pk = bell#<n>`), rewritten with a new token after marks were written to the
 * shard (after they are durable; a scanner rings a shard at most once per `scanner.bellIntervalMs`, the last ring
 * trailing) or when its table may be worked on again (a guard confirm). An idle producer checks
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

/** The current tokens of the shards' bells ('' for a bell that never rang), in consistent BatchGetItems. */
export async function readBells(
  ddb: DynamoDBClient,
  marksTable: string,
  shards: readonly number[],
): Promise<Map<number, string>> {
  const items = await batchGetAll(
    ddb,
    marksTable,
    shards.map((shard) => bellKey(shard)),
    { consistent: true },
  );
  const tokens = new Map<number, string>(shards.map((shard) => [shard, '']));
  for (const item of items) {
    const shard = Number(item[INTERNAL_KEY]?.S?.slice('bell#'.length));
    if (tokens.has(shard)) tokens.set(shard, item.token?.S ?? '');
  }
  return tokens;
}

/** The bell's current token ('' when it never rang). */
export async function readBell(ddb: DynamoDBClient, marksTable: string, shard: number): Promise<string> {
  const out = await withRetry(
    () => ddb.send(new GetItemCommand({ TableName: marksTable, Key: bellKey(shard), ConsistentRead: true })),
    dynamoRetry,
  );
  return out.Item?.token?.S ?? '';
}
