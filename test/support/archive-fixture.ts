import type { Admin, Message, Producer } from 'kafkajs';
import { ContainerWriter, decodeContainer } from '../../archive/format/avro-container';
import { RecentIds } from '../../archiver/dedup';
import type { ManifestEntry } from '../../archive/history';
import { dataFileFormat } from '../../archive/format';
import { PartitionWorker } from '../../archiver/partition';
import { decodeArchiveFile } from '../../archive/reader';
import { prepareRow, type PreparedRow } from '../../archive/rows';
import { assertSafePath, assertSafePrefix, type ArchiveStorage } from '../../archive/storage';
import {
  KeyIndexSchema,
  LossRecordSchema,
  ManifestSchema,
  besideIndexPathFor,
  dataFilePath,
  encodeArchiveJson,
  formatOfPath,
  indexPathFor,
  manifestPath,
  parseArchiveJson,
  parseDataFilePath,
  parseManifestPath,
  type DataFormat,
  type KeyIndex,
  type Manifest,
} from '../../archive/storage/layout';
import { verifyArchive } from '../../archive-tools/verify';
import { silentLogger } from '../../core/logger';
import {
  archivedRecordType,
  canonicalJson,
  deriveEventId,
  encodeRemove,
  encodeRetraction,
  formatSequenceNumber,
  messageKey,
  streamArn,
  toArchived,
  toAvroArchived,
  type ArchivedRecord,
  type AttributeMap,
  type AvroArchivedRecord,
  type Decoded,
  type Encoding,
  type Retraction,
  type StreamRecord,
} from '../../schemas';

/**
 * The archive fixture: stream records, the Kafka messages that carry them, the archive rows the archiver makes of
 * them, rolls written in the archive's layout (directly, or by a real partition worker), an in-memory archive, and
 * a structural read of a whole archive. Unit tests, integration tests and the benchmarks (bench/, built without
 * Jest's types) share it, so it uses no Jest global and reaches no service.
 */

// ---------------------------------------------------------------------------------------------------------------
// Stream records and their Kafka messages.

/** What tells one REMOVE record from another; the rest is what DynamoDB Streams writes for a TTL deletion. */
export interface RemoveFields {
  table: string;
  eventID: string;
  keys: StreamRecord['dynamodb']['Keys'];
  image: StreamRecord['dynamodb']['OldImage'];
  deletedAtSec: number;
  sequenceNumber: string;
  sizeBytes: number;
  viewType: StreamRecord['dynamodb']['StreamViewType'];
  /** The label ending the stream's ARN. */
  streamLabel: string;
}

/** A REMOVE record of a TTL deletion (by dynamodb.amazonaws.com), in us-east-1 of account 000000000000. */
export function removeRecord(f: RemoveFields): StreamRecord {
  return {
    eventID: f.eventID,
    eventName: 'REMOVE',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: f.deletedAtSec,
      Keys: f.keys,
      OldImage: f.image,
      SequenceNumber: f.sequenceNumber,
      SizeBytes: f.sizeBytes,
      StreamViewType: f.viewType,
    },
    eventSourceARN: streamArn('us-east-1', '000000000000', f.table, f.streamLabel),
    userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
  };
}

/** A REMOVE record of about `payloadBytes` bytes of image, deleted at `deletedAtSec`. */
export function makeRecord(table: string, i: number, deletedAtSec: number, payloadBytes = 900): StreamRecord {
  const keys = { pk: { S: `item-${i}` }, sk: { N: String(i % 7) } };
  return removeRecord({
    table,
    eventID: deriveEventId({ table, keys, i, deletedAtSec }),
    keys,
    image: {
      ...keys,
      expiresAt: { N: String(deletedAtSec - 1) },
      payload: { S: 'x'.repeat(payloadBytes) },
      tags: { SS: ['a', 'b'] },
      n: { N: String(i) },
    },
    deletedAtSec,
    sequenceNumber: formatSequenceNumber(1_000_000 + i),
    sizeBytes: payloadBytes + 60,
    viewType: 'NEW_AND_OLD_IMAGES',
    streamLabel: '2024-01-01T00:00:00.000',
  });
}

/** `r` with other keys: the new keys replace the old ones in Keys and in the deleted image. */
export function withKeys(r: StreamRecord, keys: AttributeMap): StreamRecord {
  return {
    ...r,
    dynamodb: { ...r.dynamodb, Keys: keys, OldImage: { ...r.dynamodb.OldImage, ...keys } },
  };
}

/** The stream message of a REMOVE of `table` (Avro unless told otherwise), with `headers` added to its own. */
export function removeMessage(
  r: StreamRecord,
  table: string,
  options: { encoding?: Encoding; headers?: Record<string, string> } = {},
): Message {
  const { value, headers } = encodeRemove(r, options.encoding ?? 'avro');
  return { key: messageKey(table, r.dynamodb.Keys), value, headers: { ...headers, ...options.headers } };
}

/** The stream message retracting `r` (a failed delete condition) at `retractedAtMs`, JSON unless told otherwise. */
export function retractMessage(
  r: StreamRecord,
  table: string,
  retractedAtMs: number,
  encoding: Encoding = 'json',
): Message {
  const { value, headers } = encodeRetraction(
    {
      eventName: 'RETRACT',
      retractsEventID: r.eventID,
      table,
      Keys: r.dynamodb.Keys,
      reason: 'condition-failed',
      retractedAt: retractedAtMs,
    },
    encoding,
  );
  return { key: messageKey(table, r.dynamodb.Keys), value, headers };
}

/** The stream message an archive row came from. */
export function streamMessage(row: ArchivedRecord, encoding: Encoding): Message {
  if (row.kind === 'remove' && row.record) return removeMessage(row.record, row.table, { encoding });
  if (row.retraction) {
    const { value, headers } = encodeRetraction(row.retraction, encoding);
    return { key: messageKey(row.table, row.retraction.Keys), value, headers };
  }
  throw new Error('row without body');
}

export async function produceAll(
  producer: Producer,
  topic: string,
  messages: Message[],
  chunk = 500,
): Promise<void> {
  for (let i = 0; i < messages.length; i += chunk) {
    await producer.send({ topic, acks: -1, messages: messages.slice(i, i + chunk) });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Archive rows and rolls written in the shared layout: data files (Avro containers of archive rows), key indexes
// beside them and a complete manifest per roll. The real archiver writes the same layout; integration tests also
// run against its output.

let seq = 1000n;

export interface RemoveSpec {
  table: string;
  keys: AttributeMap;
  /** The deleted image; the keys are merged in. */
  image?: AttributeMap;
  /** Deletion time, epoch seconds. */
  deletedAtS: number;
  sequenceNumber?: bigint;
  eventID?: string;
}

export function removeRow(
  spec: RemoveSpec,
  at: { topic?: string; partition?: number; offset?: bigint } = {},
): ArchivedRecord {
  const sequence = spec.sequenceNumber ?? seq++;
  const image = { ...(spec.image ?? {}), ...spec.keys };
  const eventID =
    spec.eventID ??
    deriveEventId({ table: spec.table, key: canonicalJson(spec.keys), sequence: sequence.toString() });
  const record = removeRecord({
    table: spec.table,
    eventID,
    keys: spec.keys,
    image,
    deletedAtSec: spec.deletedAtS,
    sequenceNumber: formatSequenceNumber(sequence),
    sizeBytes: Buffer.byteLength(canonicalJson(image)),
    viewType: 'OLD_IMAGE',
    streamLabel: '2025-01-01T00:00:00.000',
  });
  return {
    topic: at.topic ?? 'ttlstream.remove',
    partition: at.partition ?? 0,
    offset: (at.offset ?? 0n).toString(),
    kafkaTimestamp: spec.deletedAtS * 1000,
    kind: 'remove',
    table: spec.table,
    eventID,
    record,
    retraction: null,
  };
}

/** The row of a retraction of `of` at `retractedAtMs`, at `of`'s place in the stream. */
export function retractRow(
  of: ArchivedRecord,
  retractedAtMs: number,
  reason: Retraction['reason'] = 'condition-failed',
): ArchivedRecord {
  if (!of.record) throw new Error('retractRow needs a REMOVE row');
  return {
    ...of,
    kind: 'retract',
    kafkaTimestamp: retractedAtMs,
    record: null,
    retraction: {
      eventName: 'RETRACT',
      retractsEventID: of.eventID,
      table: of.table,
      Keys: of.record.dynamodb.Keys,
      reason,
      retractedAt: retractedAtMs,
    },
  };
}

/**
 * The rows of the roll tests: the archive row of a REMOVE of makeRecord(table, offset, deletedAtSec, 20), read at
 * `offset` of partition 1 of `topic` and published 5 ms after the deletion.
 */
export function removeRowAt(
  topic: string,
  table: string,
  offset: number,
  deletedAtSec: number,
): ArchivedRecord {
  return toArchived(
    { kind: 'remove', record: makeRecord(table, offset, deletedAtSec, 20) },
    { topic, partition: 1, offset: String(offset), timestamp: String(deletedAtSec * 1000 + 5) },
  );
}

/** The row of a retraction (the item changed) of `retracts` at `atMs`, read at `offset` of the same partition. */
export function retractRowAt(offset: number, retracts: ArchivedRecord, atMs: number): ArchivedRecord {
  return { ...retractRow(retracts, atMs, 'item-changed'), offset: String(offset) };
}

function deletedAtMsOf(row: ArchivedRecord): number {
  if (row.record) return row.record.dynamodb.ApproximateCreationDateTime * 1000;
  if (row.retraction) return row.retraction.retractedAt;
  throw new Error('row without body');
}

/**
 * Write `rows` as one roll of one partition (offsets first, first+1, ...): one data file per
 * (table, deletion hour), each with its key index, then the manifest. Returns the data file paths.
 */
export async function writeRoll(
  storage: ArchiveStorage,
  rows: ArchivedRecord[],
  at: { topic?: string; partition?: number; first?: bigint; format?: DataFormat } = {},
): Promise<string[]> {
  const format = at.format ?? 'avro';
  const topic = at.topic ?? 'ttlstream.remove';
  const partition = at.partition ?? 0;
  const first = at.first ?? 0n;
  const last = first + BigInt(rows.length) - 1n;
  const groups = new Map<string, { table: string; rows: ArchivedRecord[] }>();
  rows.forEach((row, i) => {
    const placed = { ...row, topic, partition, offset: (first + BigInt(i)).toString() };
    const path = dataFilePath({
      table: row.table,
      topic,
      partition,
      deletedAtMs: deletedAtMsOf(row),
      first,
      last,
      format,
    });
    const group = groups.get(path) ?? { table: row.table, rows: [] };
    group.rows.push(placed);
    groups.set(path, group);
  });
  for (const [path, group] of groups) {
    if (format === 'avro') {
      const writer = new ContainerWriter(archivedRecordType, { blockBytes: 2048 });
      for (const row of group.rows) writer.append(toAvroArchived(row));
      await storage.put(path, await writer.finish());
    } else await storage.put(path, await dataFileFormat(format).encode(group.rows, { ttl: null }));
    const index: KeyIndex = {
      file: path,
      table: group.table,
      topic,
      partition,
      first: first.toString(),
      last: last.toString(),
      rows: group.rows.map((row, n) => ({
        key: canonicalJson(row.record ? row.record.dynamodb.Keys : row.retraction?.Keys),
        eventID: row.eventID,
        kind: row.kind,
        ...(row.kind === 'retract' ? { retractsEventID: row.eventID } : {}),
        deletedAtMs: deletedAtMsOf(row),
        sequenceNumber: row.record?.dynamodb.SequenceNumber ?? '',
        row: n,
      })),
    };
    await storage.put(indexPathFor(path), encodeArchiveJson(index));
  }
  await storage.put(
    manifestPath(topic, partition, first, last),
    encodeArchiveJson({
      state: 'complete',
      first: first.toString(),
      last: last.toString(),
      files: [...groups.keys()],
      records: rows.length,
    }),
  );
  return [...groups.keys()];
}

/**
 * A real partition worker of partition 0 of `topic` writing to `storage`, as the archiver runs one: rolls are cut
 * by flush() (the size and age limits are out of reach unless given), offsets are committed nowhere unless
 * `commit` is given, and it starts at `start` with the rolls in `redo` to redo.
 */
export function archiveWorker(
  storage: ArchiveStorage,
  topic: string,
  options: {
    start?: bigint;
    redo?: ManifestEntry[];
    rollBytes?: number;
    rollMs?: number;
    commit?: (next: bigint) => Promise<void>;
    dedupSize?: number;
    format?: DataFormat;
  } = {},
): PartitionWorker {
  return new PartitionWorker(
    {
      topic,
      partition: 0,
      storage,
      logger: silentLogger,
      rollBytes: options.rollBytes ?? 1_000_000,
      rollMs: options.rollMs ?? 60_000,
      commit: options.commit ?? (async () => undefined),
      ...(options.format ? { format: options.format } : {}),
    },
    { start: options.start ?? 0n, redo: options.redo ?? [], dedup: new RecentIds(options.dedupSize ?? 100) },
  );
}

/**
 * `n` prepared REMOVE rows of table `orders` read from topic `t`, partition 0, at offsets 0.., deleted every `stepS`
 * seconds from `baseS` (100-byte payloads): a small archive for the CLI's in-process tests.
 */
export function ordersRows(n: number, baseS: number, stepS: number): PreparedRow[] {
  return tableRows('orders', n, baseS, stepS, 100);
}

/** As ordersRows, for any table and payload size, the items numbered from `firstItem`. */
export function tableRows(
  table: string,
  n: number,
  baseS: number,
  stepS: number,
  payloadBytes: number,
  firstItem = 0,
): PreparedRow[] {
  return Array.from({ length: n }, (_, i) =>
    prepareRow(
      toArchived(
        { kind: 'remove', record: makeRecord(table, firstItem + i, baseS + i * stepS, payloadBytes) },
        { topic: 't', partition: 0, offset: String(firstItem + i), timestamp: '1' },
      ),
    ),
  );
}

/**
 * `rows` archived by archiveWorker() at offsets `first`, `first` + 1, ... (default 0), each seen with Kafka
 * timestamp `timestampMs` (default 1): a roll is cut after every `perRoll` rows and after the last. Resolves when
 * every roll is written.
 */
export async function archiveRows(
  storage: ArchiveStorage,
  topic: string,
  rows: PreparedRow[],
  options: {
    perRoll: number;
    first?: bigint;
    redo?: ManifestEntry[];
    timestampMs?: number;
    dedupSize?: number;
    format?: DataFormat;
  },
): Promise<void> {
  const first = options.first ?? 0n;
  const worker = archiveWorker(storage, topic, {
    start: first,
    ...(options.format ? { format: options.format } : {}),
    ...(options.redo ? { redo: options.redo } : {}),
    ...(options.dedupSize ? { dedupSize: options.dedupSize } : {}),
  });
  rows.forEach((row, i) => {
    worker.accept(first + BigInt(i), row, options.timestampMs ?? 1);
    if (i % options.perRoll === options.perRoll - 1) worker.flush();
  });
  worker.flush();
  await worker.drain();
}

/** An in-memory archive that records every operation, for tests of write order and recovery. */
export class MemoryStorage implements ArchiveStorage {
  readonly kind = 'fs' as const;
  readonly root = 'memory://';
  readonly objects = new Map<string, Buffer>();
  readonly ops: string[] = [];
  /** Make the next put whose path matches fail once. */
  failOnce: RegExp | null = null;
  /** While set, every put fails with this error (a bucket that denies writes). */
  failAll: (() => Error) | null = null;

  async put(path: string, body: Buffer): Promise<void> {
    assertSafePath(path);
    if (this.failOnce?.test(path)) {
      this.failOnce = null;
      throw new Error(`injected failure on ${path}`);
    }
    if (this.failAll) throw this.failAll();
    this.ops.push(`put ${path}`);
    this.objects.set(path, Buffer.from(body));
  }

  async get(path: string): Promise<Buffer | null> {
    assertSafePath(path);
    return this.objects.get(path) ?? null;
  }

  async putIfAbsent(path: string, body: Buffer): Promise<boolean> {
    if (this.objects.has(path)) return false;
    await this.put(path, body);
    return true;
  }

  async move(from: string, to: string): Promise<void> {
    const body = this.objects.get(from);
    if (!body) throw new Error(`move of missing ${from}`);
    await this.put(to, body);
    await this.delete(from);
  }

  async *list(prefix: string): AsyncIterable<string> {
    assertSafePrefix(prefix);
    this.ops.push(`list ${prefix}`);
    for (const k of [...this.objects.keys()].sort()) if (k.startsWith(prefix)) yield k;
  }

  async delete(path: string): Promise<void> {
    assertSafePath(path);
    this.ops.push(`delete ${path}`);
    this.objects.delete(path);
  }

  json(path: string): unknown {
    const b = this.objects.get(path);
    return b ? JSON.parse(b.toString('utf8')) : undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading an archive back.

/** The kinds of what `archive verify` finds in `storage`, sorted, a kind found twice listed twice. */
export async function findingKinds(storage: ArchiveStorage): Promise<string[]> {
  return (await verifyArchive(storage)).findings.map((f) => f.kind).sort();
}

/** Everything `it` yields (a storage listing, a catalog scan), in order. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

export interface ArchiveContents {
  rows: AvroArchivedRecord[];
  dataFiles: string[];
  manifests: Array<{ path: string; topic: string; partition: number; manifest: Manifest }>;
  /** Layout problems found: anything here is a defect. */
  problems: string[];
}

/**
 * Read the whole archive and check its structure: every data file has its key index and agrees
 * with it, every data file is listed by a complete manifest and every listed file exists, and
 * each partition's manifests form one unbroken chain of offset ranges (broken only where a loss
 * record accounts for the missing offsets).
 */
export async function readArchive(
  storage: ArchiveStorage,
  opts: { allowWriting?: boolean } = {},
): Promise<ArchiveContents> {
  const all: string[] = [];
  for await (const p of storage.list('')) all.push(p);
  const present = new Set(all);
  const problems: string[] = [];
  const rows: AvroArchivedRecord[] = [];
  const dataFiles = all.filter((p) => parseDataFilePath(p) !== null);
  for (const path of dataFiles) {
    const body = await storage.get(path);
    if (!body) throw new Error(`listed but missing: ${path}`);
    let decoded: { rows: AvroArchivedRecord[] };
    if (formatOfPath(path) === 'avro') {
      const container = await decodeContainer<AvroArchivedRecord>(body);
      if (container.codec !== 'deflate') problems.push(`${path}: codec ${container.codec}`);
      decoded = container;
    } else decoded = { rows: (await decodeArchiveFile(body, path)).map(toAvroArchived) };
    rows.push(...decoded.rows);
    // The archiver writes every key index under _index/, none beside its data file (docs/decisions/0033).
    if (present.has(besideIndexPathFor(path))) problems.push(`${path}: key index beside the data file`);
    const idxBody = await storage.get(indexPathFor(path));
    if (!idxBody) {
      problems.push(`${path}: no key index`);
      continue;
    }
    const idx: KeyIndex = parseArchiveJson(KeyIndexSchema, idxBody, indexPathFor(path));
    if (idx.file !== path) problems.push(`${path}: index names ${idx.file}`);
    const want = decoded.rows.map((r, n) => `${n}:${r.kind}:${r.eventID}`);
    const got = idx.rows.map((r) => `${r.row}:${r.kind}:${r.eventID}`);
    if (JSON.stringify(want) !== JSON.stringify(got))
      problems.push(`${path}: index rows differ from data rows`);
  }
  const manifests: ArchiveContents['manifests'] = [];
  const listed = new Set<string>();
  for (const path of all.filter((p) => p.startsWith('_manifest/'))) {
    const m = /^_manifest\/([^/]+)\/(\d+)\//.exec(path);
    const body = await storage.get(path);
    if (!m || !body || !parseManifestPath(path)) {
      problems.push(`stray manifest path ${path}`);
      continue;
    }
    const manifest = parseArchiveJson(ManifestSchema, body, path);
    manifests.push({ path, topic: m[1] as string, partition: Number(m[2]), manifest });
    if (manifest.state !== 'complete' && !opts.allowWriting)
      problems.push(`${path}: still ${manifest.state}`);
    for (const f of manifest.files) {
      listed.add(f);
      if (!present.has(f)) problems.push(`${path}: lists missing ${f}`);
      if (!present.has(indexPathFor(f))) problems.push(`${path}: lists ${f} without index`);
    }
  }
  for (const f of dataFiles) if (!listed.has(f)) problems.push(`orphan data file ${f}`);
  const byPartition = new Map<string, Array<{ first: bigint; last: bigint }>>();
  for (const m of manifests) {
    const k = `${m.topic}/${m.partition}`;
    const list = byPartition.get(k) ?? [];
    list.push({ first: BigInt(m.manifest.first), last: BigInt(m.manifest.last) });
    byPartition.set(k, list);
  }
  // A gap in the chain is allowed only where a loss record accounts for every offset of it.
  const losses = new Map<string, Array<{ from: bigint; to: bigint }>>();
  for (const path of all.filter((p) => p.startsWith('_loss/'))) {
    const m = /^_loss\/([^/]+)\/(\d+)\//.exec(path);
    const body = await storage.get(path);
    if (!m || !body) continue;
    const loss = parseArchiveJson(LossRecordSchema, body, path);
    const k = `${m[1]}/${m[2]}`;
    losses.set(k, [...(losses.get(k) ?? []), { from: BigInt(loss.from), to: BigInt(loss.to) }]);
  }
  for (const [k, list] of byPartition) {
    list.sort((a, b) => (a.first < b.first ? -1 : 1));
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1] as { last: bigint };
      const cur = list[i] as { first: bigint };
      if (cur.first === prev.last + 1n) continue;
      const gapFrom = prev.last + 1n;
      const gapTo = cur.first - 1n;
      const explained =
        cur.first > gapFrom && (losses.get(k) ?? []).some((l) => l.from <= gapFrom && l.to >= gapTo);
      if (!explained) problems.push(`${k}: manifests ${prev.last} then ${cur.first} (gap or overlap)`);
    }
  }
  return { rows, dataFiles, manifests, problems };
}

/** eventIDs (remove rows) with how often each occurs. */
export function countIds(
  rows: AvroArchivedRecord[],
  kind: 'remove' | 'retract' = 'remove',
): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) if (r.kind === kind) out.set(r.eventID, (out.get(r.eventID) ?? 0) + 1);
  return out;
}

/**
 * Invariant 4 against what the topic holds: each REMOVE and each RETRACT on the topic (by eventID; a duplicate is the
 * same one) archived exactly once, and nothing archived that is not on the topic. One line per violation.
 */
export function archivedOncePerEventId(
  rows: AvroArchivedRecord[],
  onTopic: ReadonlyArray<{ decoded?: Decoded }>,
): string[] {
  const problems: string[] = [];
  for (const kind of ['remove', 'retract'] as const) {
    const ids = new Set(
      onTopic.flatMap(({ decoded }) =>
        decoded?.kind !== kind
          ? []
          : [decoded.kind === 'remove' ? decoded.record.eventID : decoded.retraction.retractsEventID],
      ),
    );
    const archived = countIds(rows, kind);
    for (const id of ids)
      if (archived.get(id) !== 1) problems.push(`${kind} ${id}: archived ${archived.get(id) ?? 0} times`);
    for (const id of archived.keys())
      if (!ids.has(id)) problems.push(`${kind} ${id}: archived, not on the topic`);
  }
  return problems;
}

export async function committedOffsets(
  admin: Admin,
  groupId: string,
  topic: string,
): Promise<Map<number, string>> {
  const res = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((res[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
}

export async function highWatermarks(admin: Admin, topic: string): Promise<Map<number, string>> {
  return new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, o.high]));
}

/** Whether group `groupId` has committed every partition of `topic` up to its end. */
export async function allCommitted(admin: Admin, groupId: string, topic: string): Promise<boolean> {
  const c = await committedOffsets(admin, groupId, topic);
  const h = await highWatermarks(admin, topic);
  return [...h].every(([p, o]) => c.get(p) === o);
}
