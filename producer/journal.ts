import {
  QueryCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { withRetry } from '../core/retry';
import { INTERNAL_KEY, INTERNAL_SORT_KEY } from '../core/tables';
import type { Item } from '../policy/types';
import { batchWriteAll, dynamoRetry } from '../pipeline/ddb-batch';
import { fromJsonItem, toJsonItem, type JsonItem } from '../pipeline/image';
import { journalPk, type MarkAddress } from '../pipeline/marks';

/**
 * The producer's journal (docs/decisions/0001-deletion-protocol.md): one small document per batch, not one row per
 * item, holding the deletions the batch is carrying out and how far each got. It lives in the marks table under
 * `pk = journal#<shard>`, written only by the producer holding that shard's lease. Writing the batch's state once
 * per step instead of once per item is what keeps the protocol's overhead per deletion small next to the
 * conditional DeleteItem itself.
 *
 * Each write of a batch's journal is a new *version* (`sk = <batchId>#v<nn>#<part>`), never an overwrite: a
 * journal too large for one row is split into parts, and a crash in the middle of writing the parts of version
 * n+1 must leave version n readable. The reader takes, per batch, the highest version with all its parts.
 */

/**
 * INTENT: about to publish. PUBLISHED: the REMOVE is acknowledged, the delete may or may not have run. DELETED: the
 * conditional delete succeeded (witnessed right after the deletes), so a key found present again later is a new
 * incarnation, not a sign that the delete failed. RETRACTED: the deletion will not happen and its RETRACT is (about
 * to be) published; written before the RETRACT goes out, so that no recovery ever resumes a retracted deletion and
 * publishes its eventID again after the retraction (docs/decisions/0009-event-id-per-decision.md).
 */
export type IntentState = 'INTENT' | 'PUBLISHED' | 'DELETED' | 'RETRACTED';

/** The deleted image differed from the published one: RETRACT the intent's eventID, publish this instead. */
export interface Correction {
  eventID: string;
  imageHash: string;
  sequenceNumber: string;
  image: Item;
}

export interface Intent {
  address: MarkAddress;
  eventID: string;
  imageHash: string;
  sequenceNumber: string;
  decidedAtMs: number;
  state: IntentState;
  /** Only with state DELETED: a correction not yet known to be published. */
  correction?: Correction;
  /** Only with state RETRACTED: the reason its RETRACT carries (published again, identical, by a recovery). */
  retractReason?: string;
  /**
   * The sk of the mark row the decision (or the first of its chain) was taken on. A recovery reads that row with
   * the journal and finishes its marks with the intent, so the mark cannot outlive its decision and be taken
   * again for a decision with the same eventID (0009).
   */
  markRow?: string;
}

/** Gzipped document bytes per row: far below DynamoDB's 400 KB item limit. */
const PART_BYTES = 300 * 1024;
const STATE_RANK: Record<IntentState, number> = { INTENT: 0, PUBLISHED: 1, DELETED: 2, RETRACTED: 3 };

/** Sortable by time, unique across processes. */
export function newBatchId(nowMs: number): string {
  return `${String(Math.floor(nowMs)).padStart(15, '0')}-${randomBytes(6).toString('hex')}`;
}

interface DocEntry {
  sk: string;
  table: string;
  keys: JsonItem;
  eventID: string;
  imageHash: string;
  sequenceNumber: string;
  decidedAtMs: number;
  state: IntentState;
  correction?: Omit<Correction, 'image'> & { image: JsonItem };
  retractReason?: string;
  markRow?: string;
}

function toDoc(i: Intent): DocEntry {
  return {
    sk: i.address.sk,
    table: i.address.table,
    keys: toJsonItem(i.address.keys),
    eventID: i.eventID,
    imageHash: i.imageHash,
    sequenceNumber: i.sequenceNumber,
    decidedAtMs: i.decidedAtMs,
    state: i.state,
    ...(i.correction ? { correction: { ...i.correction, image: toJsonItem(i.correction.image) } } : {}),
    ...(i.retractReason !== undefined ? { retractReason: i.retractReason } : {}),
    ...(i.markRow !== undefined ? { markRow: i.markRow } : {}),
  };
}

function fromDoc(shard: number, d: DocEntry): Intent {
  return {
    address: { table: d.table, keys: fromJsonItem(d.keys), shard, sk: d.sk },
    eventID: d.eventID,
    imageHash: d.imageHash,
    sequenceNumber: d.sequenceNumber,
    decidedAtMs: d.decidedAtMs,
    state: d.state,
    ...(d.correction ? { correction: { ...d.correction, image: fromJsonItem(d.correction.image) } } : {}),
    ...(d.retractReason !== undefined ? { retractReason: d.retractReason } : {}),
    ...(d.markRow !== undefined ? { markRow: d.markRow } : {}),
  };
}

type Key = Record<string, AttributeValue>;

function rowSk(batchId: string, version: number, part: number): string {
  return `${batchId}#v${String(version).padStart(3, '0')}#${String(part).padStart(3, '0')}`;
}

/** The rows of one version of a batch's journal. Pure; exported for tests. */
export function journalRows(
  shard: number,
  batchId: string,
  version: number,
  intents: readonly Intent[],
): Key[] {
  const gz = gzipSync(JSON.stringify(intents.map(toDoc)));
  const parts = Math.max(1, Math.ceil(gz.length / PART_BYTES));
  return Array.from({ length: parts }, (_, p) => ({
    [INTERNAL_KEY]: { S: journalPk(shard) },
    [INTERNAL_SORT_KEY]: { S: rowSk(batchId, version, p) },
    kind: { S: 'journal' },
    parts: { N: String(parts) },
    doc: { B: new Uint8Array(gz.subarray(p * PART_BYTES, (p + 1) * PART_BYTES)) },
  }));
}

/** The journal of one batch as this process writes it: versions written so far, for the clean-up. */
export class BatchJournal {
  private version = 0;
  private readonly written: Key[] = [];
  private last: Key[] = [];
  constructor(
    private readonly ddb: DynamoDBClient,
    private readonly marksTable: string,
    readonly shard: number,
    readonly batchId: string,
  ) {}

  /** Write the next version: `intents` is the whole journal of the batch at this step. */
  async write(intents: readonly Intent[]): Promise<void> {
    this.version++;
    const rows = journalRows(this.shard, this.batchId, this.version, intents);
    await batchWriteAll(
      this.ddb,
      this.marksTable,
      rows.map((Item) => ({ PutRequest: { Item } })),
    );
    this.last = rows.map((r) => ({
      [INTERNAL_KEY]: r[INTERNAL_KEY] as AttributeValue,
      [INTERNAL_SORT_KEY]: r[INTERNAL_SORT_KEY] as AttributeValue,
    }));
    this.written.push(...this.last);
  }

  /** Keys of the rows of the latest version (all its parts). */
  lastVersionKeys(): Key[] {
    return [...this.last];
  }

  /** Keys of every row written, oldest first. */
  rowKeys(): Key[] {
    return [...this.written];
  }
}

/** What earlier batches of a shard left behind: their latest intent per item, and the rows to remove once done. */
export interface Recovered {
  intents: Map<string, Intent>;
  rowKeys: Key[];
}

/**
 * Merge the rows read from a shard's journal. Pure; exported for tests. Per batch, the highest version whose parts
 * are all present; across batches (oldest first), per item: the same deletion (eventID) keeps its most advanced
 * state and any pending correction, a different deletion from a later batch replaces an earlier one (a later batch
 * only starts a new deletion of an item after retracting the earlier one).
 */
export function mergeJournalRows(shard: number, rows: readonly Key[]): Recovered {
  const byBatch = new Map<string, Map<number, Map<number, { parts: number; doc: Uint8Array }>>>();
  const rowKeys: Key[] = [];
  for (const row of rows) {
    const sk = row[INTERNAL_SORT_KEY]?.S ?? '';
    rowKeys.push({
      [INTERNAL_KEY]: row[INTERNAL_KEY] as AttributeValue,
      [INTERNAL_SORT_KEY]: row[INTERNAL_SORT_KEY] as AttributeValue,
    });
    const m = /^(.+)#v(\d+)#(\d+)$/.exec(sk);
    const doc = row.doc?.B;
    if (!m || !doc) continue;
    const [, batchId, v, p] = m as unknown as [string, string, string, string];
    const versions =
      byBatch.get(batchId) ?? new Map<number, Map<number, { parts: number; doc: Uint8Array }>>();
    const parts = versions.get(Number(v)) ?? new Map<number, { parts: number; doc: Uint8Array }>();
    parts.set(Number(p), { parts: Number(row.parts?.N ?? '1'), doc });
    versions.set(Number(v), parts);
    byBatch.set(batchId, versions);
  }
  const intents = new Map<string, Intent>();
  for (const batchId of [...byBatch.keys()].sort()) {
    const versions = byBatch.get(batchId) as Map<number, Map<number, { parts: number; doc: Uint8Array }>>;
    const complete = [...versions.entries()]
      .filter(([, parts]) => {
        const n = [...parts.values()][0]?.parts ?? 0;
        return parts.size === n && Array.from({ length: n }, (_, i) => parts.has(i)).every(Boolean);
      })
      .sort(([a], [b]) => b - a)[0];
    if (!complete) continue; // only a first version cut short: nothing of it was published yet
    const [, parts] = complete;
    const gz = Buffer.concat([...parts.entries()].sort(([a], [b]) => a - b).map(([, x]) => x.doc));
    const docs = JSON.parse(gunzipSync(gz).toString('utf8')) as DocEntry[];
    for (const d of docs) {
      const next = fromDoc(shard, d);
      const prev = intents.get(d.sk);
      if (prev && prev.eventID === next.eventID) {
        const correction = next.correction ?? prev.correction;
        const later = STATE_RANK[prev.state] > STATE_RANK[next.state] ? prev : next;
        intents.set(d.sk, { ...later, ...(correction && later.state === 'DELETED' ? { correction } : {}) });
      } else {
        intents.set(d.sk, next);
      }
    }
  }
  return { intents, rowKeys };
}

/** Read a shard's whole journal (consistent): normally empty, or the batches a crash or an error interrupted. */
export async function loadJournal(
  ddb: DynamoDBClient,
  marksTable: string,
  shard: number,
): Promise<Recovered> {
  const rows: Key[] = [];
  let start: Key | undefined;
  do {
    const page = await withRetry(
      () =>
        ddb.send(
          new QueryCommand({
            TableName: marksTable,
            KeyConditionExpression: '#pk = :pk',
            ExpressionAttributeNames: { '#pk': INTERNAL_KEY },
            ExpressionAttributeValues: { ':pk': { S: journalPk(shard) } },
            ConsistentRead: true,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      dynamoRetry,
    );
    rows.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return mergeJournalRows(shard, rows);
}

/**
 * Delete journal rows so that a crash part-way never leaves an older state readable in place of a newer one: batch
 * by batch, oldest first, and within a batch its latest version last (the reader takes a batch's highest complete
 * version, and a later batch's entry over an earlier one). Otherwise a surviving older row could bring back a
 * deletion a newer row had retracted, and a recovery would publish it again (0009). Sks sort by batch, then version.
 * `withFirst` (other rows of the marks table, the batch's finished mark rows) go in the first request: before every
 * latest version, which is all the order above asks of them; one round trip fewer per batch.
 */
export async function deleteJournalRows(
  ddb: DynamoDBClient,
  marksTable: string,
  keys: readonly Key[],
  withFirst: readonly Key[] = [],
): Promise<void> {
  const byBatch = new Map<string, Map<string, Key[]>>();
  for (const k of keys) {
    const sk = k[INTERNAL_SORT_KEY]?.S ?? '';
    const m = /^(.+)#(v\d+)#\d+$/.exec(sk);
    const batch = m?.[1] ?? sk;
    const version = m?.[2] ?? '';
    const versions = byBatch.get(batch) ?? new Map<string, Key[]>();
    versions.set(version, [...(versions.get(version) ?? []), k]);
    byBatch.set(batch, versions);
  }
  let first = [...withFirst];
  for (const batch of [...byBatch.keys()].sort()) {
    const versions = byBatch.get(batch) as Map<string, Key[]>;
    const order = [...versions.keys()].sort();
    const latest = order.pop() as string;
    await deleteRows(ddb, marksTable, [...first, ...order.flatMap((v) => versions.get(v) as Key[])]);
    first = [];
    await deleteRows(ddb, marksTable, versions.get(latest) as Key[]);
  }
  await deleteRows(ddb, marksTable, first);
}

export async function deleteRows(
  ddb: DynamoDBClient,
  marksTable: string,
  keys: readonly Key[],
): Promise<void> {
  const unique = new Map(keys.map((k) => [`${k[INTERNAL_KEY]?.S}|${k[INTERNAL_SORT_KEY]?.S}`, k]));
  const requests: WriteRequest[] = [...unique.values()].map((Key) => ({ DeleteRequest: { Key } }));
  await batchWriteAll(ddb, marksTable, requests);
}
