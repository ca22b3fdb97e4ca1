import type { Admin, Kafka, Message, Producer } from 'kafkajs';
import { decodeContainer } from '../../../archiver/container';
import type { ArchiveStorage } from '../../../archiver/storage';
import {
  KeyIndexSchema,
  LossRecordSchema,
  ManifestSchema,
  parseArchiveJson,
  parseDataFilePath,
  parseManifestPath,
  type KeyIndex,
  type Manifest,
} from '../../../archiver/storage/layout';
import {
  deriveEventId,
  encodeRemove,
  encodeRetraction,
  formatSequenceNumber,
  messageKey,
  streamArn,
  type AvroArchivedRecord,
  type StreamRecord,
} from '../../../schemas';

/** A REMOVE record of about `payloadBytes` bytes of image, deleted at `deletedAtSec`. */
export function makeRecord(table: string, i: number, deletedAtSec: number, payloadBytes = 900): StreamRecord {
  const keys = { pk: { S: `item-${i}` }, sk: { N: String(i % 7) } };
  return {
    eventID: deriveEventId({ table, keys, i, deletedAtSec }),
    eventName: 'REMOVE',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: deletedAtSec,
      Keys: keys,
      OldImage: {
        ...keys,
        expiresAt: { N: String(deletedAtSec - 1) },
        payload: { S: 'x'.repeat(payloadBytes) },
        tags: { SS: ['a', 'b'] },
        n: { N: String(i) },
      },
      SequenceNumber: formatSequenceNumber(1_000_000 + i),
      SizeBytes: payloadBytes + 60,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
    eventSourceARN: streamArn('us-east-1', '000000000000', table, '2024-01-01T00:00:00.000'),
    userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
  };
}

export function removeMessage(
  r: StreamRecord,
  table: string,
  extraHeaders: Record<string, string> = {},
): Message {
  const { value, headers } = encodeRemove(r, 'avro');
  return { key: messageKey(table, r.dynamodb.Keys), value, headers: { ...headers, ...extraHeaders } };
}

export function retractMessage(r: StreamRecord, table: string, retractedAtMs: number): Message {
  const { value, headers } = encodeRetraction(
    {
      eventName: 'RETRACT',
      retractsEventID: r.eventID,
      table,
      Keys: r.dynamodb.Keys,
      reason: 'condition-failed',
      retractedAt: retractedAtMs,
    },
    'json',
  );
  return { key: messageKey(table, r.dynamodb.Keys), value, headers };
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
    const decoded = await decodeContainer<AvroArchivedRecord>(body);
    if (decoded.codec !== 'deflate') problems.push(`${path}: codec ${decoded.codec}`);
    rows.push(...decoded.rows);
    const idxBody = await storage.get(`${path}.idx.json`);
    if (!idxBody) {
      problems.push(`${path}: no key index`);
      continue;
    }
    const idx: KeyIndex = parseArchiveJson(KeyIndexSchema, idxBody, `${path}.idx.json`);
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
      if (!present.has(`${f}.idx.json`)) problems.push(`${path}: lists ${f} without index`);
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

export type { Kafka };
