import type { AttributeValue, DynamoDBClient, WriteRequest } from '@aws-sdk/client-dynamodb';
import { createHash } from 'node:crypto';
import { INTERNAL_KEY, INTERNAL_SORT_KEY, ensureInternalTable } from '../core/tables';
import type { Item } from '../policy/types';
import { batchWriteAll } from './ddb-batch';
import { canonicalItem, fromJsonItem, packImage, toJsonItem, unpackImage, type JsonItem } from './image';

/**
 * The marks table (docs/decisions/0001-deletion-protocol.md): `pk = shard#<n>`, `sk = <table>#<canonical key>`
 * for mark rows (scanners), and the same sk + `#intent` for intent rows (the producer holding the shard's lease).
 * Separate rows so a scanner's idempotent re-mark never overwrites an in-flight intent.
 */

export const INTENT_SUFFIX = '#intent';
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
  if (Buffer.byteLength(sk) + INTENT_SUFFIX.length <= MAX_SK_BYTES) return sk;
  return `${table}#h:${createHash('sha256').update(canonicalKey).digest('hex')}`;
}

export function intentSk(mark: string): string {
  return mark + INTENT_SUFFIX;
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

/**
 * INTENT: about to publish. PUBLISHED: the REMOVE is acknowledged, the delete may or may not have run. DELETED: the
 * conditional delete succeeded (written in one batch right after the deletes), so a key found present again later
 * is a new incarnation, not a sign that the delete failed.
 */
export type IntentState = 'INTENT' | 'PUBLISHED' | 'DELETED';

export interface Intent {
  address: MarkAddress;
  eventID: string;
  imageHash: string;
  image?: Item;
  sequenceNumber: string;
  decidedAtMs: number;
  state: IntentState;
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

export function intentToItem(i: Intent): Record<string, AttributeValue> {
  return {
    ...rowKey(i.address.shard, intentSk(i.address.sk)),
    kind: { S: 'intent' },
    table: { S: i.address.table },
    keys: { S: JSON.stringify(toJsonItem(i.address.keys)) },
    eventID: { S: i.eventID },
    imageHash: { S: i.imageHash },
    sequenceNumber: { S: i.sequenceNumber },
    decidedAtMs: { N: String(i.decidedAtMs) },
    state: { S: i.state },
    ...(i.image ? packImage(i.image) : {}),
  };
}

/** A row read back from a shard: a mark or an intent, with its address. */
export type ShardRow = { kind: 'mark'; mark: Mark } | { kind: 'intent'; intent: Intent };

export function parseRow(row: Record<string, AttributeValue>): ShardRow {
  const pk = row[INTERNAL_KEY]?.S ?? '';
  const rawSk = row[INTERNAL_SORT_KEY]?.S ?? '';
  const shard = Number(pk.slice('shard#'.length));
  const table = row.table?.S ?? '';
  const keys = fromJsonItem(JSON.parse(row.keys?.S ?? '{}') as JsonItem);
  if (rawSk.endsWith(INTENT_SUFFIX)) {
    const sk = rawSk.slice(0, -INTENT_SUFFIX.length);
    const image = unpackImage(row);
    return {
      kind: 'intent',
      intent: {
        address: { table, keys, shard, sk },
        eventID: row.eventID?.S ?? '',
        imageHash: row.imageHash?.S ?? '',
        ...(image ? { image } : {}),
        sequenceNumber: row.sequenceNumber?.S ?? '',
        decidedAtMs: Number(row.decidedAtMs?.N ?? '0'),
        state: row.state?.S === 'PUBLISHED' || row.state?.S === 'DELETED' ? row.state.S : 'INTENT',
      },
    };
  }
  const expires = row.expiresAtMs?.N;
  return {
    kind: 'mark',
    mark: {
      address: { table, keys, shard, sk: rawSk },
      markedAtMs: Number(row.markedAtMs?.N ?? '0'),
      ...(expires !== undefined ? { expiresAtMs: Number(expires) } : {}),
    },
  };
}

/** Scanner side: write marks (idempotent; a re-mark only refreshes markedAtMs). */
export async function writeMarks(
  ddb: DynamoDBClient,
  marksTable: string,
  marks: readonly Mark[],
): Promise<void> {
  // BatchWriteItem refuses two requests for one key in a call; a page never repeats a key, but be safe.
  const unique = new Map(marks.map((m) => [`${m.address.shard}|${m.address.sk}`, m]));
  const requests: WriteRequest[] = [...unique.values()].map((m) => ({ PutRequest: { Item: markToItem(m) } }));
  await batchWriteAll(ddb, marksTable, requests);
}
