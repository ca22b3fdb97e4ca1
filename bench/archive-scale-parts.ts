import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { ContainerWriter, decodeContainer } from '../archive/format/avro-container';
import { RecentIds } from '../archiver/dedup';
import { DATA_BLOCK_BYTES } from '../archive/format';
import { columnTypeOf } from '../archive/format/parquet';
import type { ColumnData, ColumnValue } from '../archive/format/parquet-rows';
import { unzstd, writeParquet } from '../archive/format/parquet-write';
import { PartitionWorker } from '../archiver/partition';
import { prepareRow } from '../archive/rows';
import {
  FsArchiveStorage,
  hourFolderOf,
  parseDataFilePath,
  type ArchiveStorage,
  type DataFormat,
} from '../archive/storage';
import { silentLogger } from '../core/logger';
import type { Item } from '../policy';
import { archivedRecordType, deriveEventId, formatSequenceNumber, streamArn, toArchived } from '../schemas';
import type { AvroArchivedRecord, StreamRecord } from '../schemas';

/** bench/archive-scale.ts's parts: the generator, the storage wrappers, the raw rewrite and the report. */

export const TABLE = 'orders';
const TOPIC = 'ttlstream.remove';
/** The two keys `archive erase` erases, before and after compaction: each deleted three times, on three days. */
export const ERASE_KEYS: Item[] = [{ pk: { S: 'subject#before' } }, { pk: { S: 'subject#after' } }];
const DAY_S = 86_400;
const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];

/** Counts what reaches the storage: requests, objects read, bytes, as an S3 bill counts them. */
export class CountingStorage implements ArchiveStorage {
  readonly kind: 'fs' | 's3';
  readonly root: string;
  private c = CountingStorage.zero();

  constructor(readonly inner: ArchiveStorage) {
    this.kind = inner.kind;
    this.root = inner.root;
  }

  private static zero() {
    return {
      gets: 0,
      objectsRead: 0,
      bytesRead: 0,
      lists: 0,
      listRequests: 0,
      puts: 0,
      bytesWritten: 0,
      deletes: 0,
      moves: 0,
    };
  }

  reset(): void {
    this.c = CountingStorage.zero();
  }

  /** The counts since the last reset; `requests` as S3 would bill them (a move is a copy and a delete). */
  snapshot() {
    const c = this.c;
    return { ...c, requests: c.gets + c.listRequests + c.puts + c.deletes + 2 * c.moves };
  }

  async put(path: string, body: Buffer): Promise<void> {
    this.c.puts += 1;
    this.c.bytesWritten += body.length;
    await this.inner.put(path, body);
  }

  async putIfAbsent(path: string, body: Buffer): Promise<boolean> {
    this.c.puts += 1;
    return this.inner.putIfAbsent(path, body);
  }

  async get(path: string): Promise<Buffer | null> {
    this.c.gets += 1;
    const body = await this.inner.get(path);
    if (body) {
      this.c.objectsRead += 1;
      this.c.bytesRead += body.length;
    }
    return body;
  }

  async *list(prefix: string): AsyncIterable<string> {
    this.c.lists += 1;
    let n = 0;
    try {
      for await (const p of this.inner.list(prefix)) {
        n += 1;
        yield p;
      }
    } finally {
      this.c.listRequests += Math.max(1, Math.ceil(n / 1000));
    }
  }

  async delete(path: string): Promise<void> {
    this.c.deletes += 1;
    await this.inner.delete(path);
  }

  async move(from: string, to: string): Promise<void> {
    this.c.moves += 1;
    await this.inner.move(from, to);
  }
}

/** The generator's file-system archive: files written without fsync (a fixture, not an archive to keep). */
export class FastFsStorage implements ArchiveStorage {
  readonly kind = 'fs' as const;
  readonly root: string;
  private readonly fs: FsArchiveStorage;
  private readonly dirs = new Set<string>();

  constructor(private readonly dir: string) {
    this.fs = new FsArchiveStorage(dir);
    this.root = this.fs.root;
  }

  async put(path: string, body: Buffer): Promise<void> {
    const target = join(this.dir, ...path.split('/'));
    const parent = dirname(target);
    if (!this.dirs.has(parent)) {
      mkdirSync(parent, { recursive: true });
      this.dirs.add(parent);
    }
    writeFileSync(target, body);
  }

  get = (path: string): Promise<Buffer | null> => this.fs.get(path);
  list = (prefix: string): AsyncIterable<string> => this.fs.list(prefix);
  delete = (path: string): Promise<void> => this.fs.delete(path);
  putIfAbsent = (path: string, body: Buffer): Promise<boolean> => this.fs.putIfAbsent(path, body);
  move = (from: string, to: string): Promise<void> => this.fs.move(from, to);
}

function imageOf(i: number): Item {
  const note = Array.from({ length: 12 }, (_, w) => WORDS[(i * 7 + w * 3) % WORDS.length]).join(' ');
  return {
    status: { S: ['shipped', 'cancelled', 'returned'][i % 3] as string },
    amount: { N: `${i % 1000}.${i % 97}` },
    customer: { S: `customer#${(i * 7919) % 50_000}` },
    tags: { SS: ['retail', `region-${i % 8}`] },
    note: { S: note },
  };
}

function record(i: number, keys: Item, deletedAtSec: number): StreamRecord {
  const image = { ...imageOf(i), ...keys, expiresAt: { N: String(deletedAtSec - 2) } };
  return {
    eventID: deriveEventId({ table: TABLE, i }),
    eventName: 'REMOVE',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: deletedAtSec,
      Keys: keys,
      OldImage: image,
      SequenceNumber: formatSequenceNumber(1_000_000 + i),
      SizeBytes: 420,
      StreamViewType: 'OLD_IMAGE',
    },
    eventSourceARN: streamArn('us-east-1', '000000000000', TABLE, '2025-01-01T00:00:00.000'),
    userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
  };
}

/** The span's first second: midnight UTC `days` + 1 days ago, so every hour of it is long closed. */
function startOf(days: number): number {
  const midnight = Math.floor(Date.now() / 1000 / DAY_S) * DAY_S;
  return midnight - Math.ceil(days + 1) * DAY_S;
}

/** Where the erase keys go: (minute, partition) → key, each key on three days. */
function subjects(minutes: number, partitions: number): Map<string, Item> {
  const out = new Map<string, Item>();
  ERASE_KEYS.forEach((key, k) =>
    [1, 3, 5].forEach((n, j) => {
      const m = Math.floor(((n + k) / 7) * minutes) + 17;
      out.set(`${Math.min(m, minutes - 1)}/${(j + k) % partitions}`, key);
    }),
  );
  return out;
}

/**
 * `records` rows over `days` days, one roll a minute per partition, written by one real partition worker per
 * partition (the archive's own writer: data files, key indexes, sealed manifests in a hash chain).
 */
export async function generate(
  storage: ArchiveStorage,
  spec: { records: number; days: number; partitions: number; format: DataFormat },
): Promise<void> {
  const minutes = Math.round(spec.days * 1440);
  const start = startOf(spec.days);
  const workers = Array.from(
    { length: spec.partitions },
    (_, p) =>
      new PartitionWorker(
        {
          topic: TOPIC,
          partition: p,
          storage,
          logger: silentLogger,
          rollBytes: 1 << 30,
          rollMs: 1e12,
          format: spec.format,
          commit: async () => undefined,
          maxQueuedRolls: 4,
        },
        { start: 0n, redo: [], dedup: new RecentIds(1) },
      ),
  );
  const offsets = workers.map(() => 0n);
  const rate = spec.records / (minutes * spec.partitions);
  const special = subjects(minutes, spec.partitions);
  let i = 0;
  for (let m = 0; m < minutes; m++) {
    for (let p = 0; p < spec.partitions; p++) {
      const slot = m * spec.partitions + p;
      const n = Math.floor((slot + 1) * rate) - Math.floor(slot * rate);
      const worker = workers[p] as PartitionWorker;
      const keys = Array.from({ length: n }, (): Item => ({ pk: { S: `order#${i}` } }));
      const subject = special.get(`${m}/${p}`);
      if (subject) keys.push(subject);
      keys.forEach((k, r) => {
        const at = start + m * 60 + Math.floor((r * 60) / keys.length);
        const offset = offsets[p] as bigint;
        offsets[p] = offset + 1n;
        const row = prepareRow(
          toArchived(
            { kind: 'remove', record: record(i++, k, at) },
            { topic: TOPIC, partition: p, offset: String(offset), timestamp: String(at * 1000 + 5) },
          ),
        );
        worker.accept(offset, row, at * 1000 + 5);
      });
      worker.flush();
      await worker.room();
    }
    if (m % 60 === 59)
      process.stderr.write(`\rgenerated ${i.toLocaleString('en-US')} rows, ${m + 1} of ${minutes} minutes`);
  }
  await Promise.all(workers.map((w) => w.drain()));
}

/** Data files per day and their median size: file sizes from the folders (file system) or the objects (S3). */
export async function dayStats(
  storage: ArchiveStorage,
): Promise<Array<{ date: string; files: number; medianBytes: number }>> {
  const sizes = new Map<string, number[]>();
  const dir = storage.root.startsWith('file://') ? storage.root.slice('file://'.length) : null;
  for await (const p of storage.list(`table=${TABLE}/`)) {
    const parsed = parseDataFilePath(p);
    if (!parsed) continue;
    const bytes = dir ? statSync(join(dir, ...p.split('/'))).size : ((await storage.get(p))?.length ?? 0);
    sizes.set(parsed.date, [...(sizes.get(parsed.date) ?? []), bytes]);
  }
  return [...sizes].map(([date, list]) => {
    const sorted = list.sort((a, b) => a - b);
    return { date, files: list.length, medianBytes: sorted[Math.floor(sorted.length / 2)] ?? 0 };
  });
}

async function rawAvro(bodies: Buffer[]): Promise<{ body: Buffer; rows: number }> {
  const writer = new ContainerWriter(archivedRecordType, { codec: 'deflate', blockBytes: DATA_BLOCK_BYTES });
  for (const body of bodies)
    for (const row of (await decodeContainer<AvroArchivedRecord>(body, { readerSchema: archivedRecordType }))
      .rows)
      writer.append(row);
  const rows = writer.rowCount;
  return { body: await writer.finish(), rows };
}

async function rawParquet(bodies: Buffer[]): Promise<{ body: Buffer; rows: number }> {
  const columns: ColumnData[] = [];
  for (const body of bodies) {
    const file = body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer;
    const metadata = parquetMetadata(file);
    const rows = (await parquetReadObjects({
      file,
      metadata,
      compressors: { ZSTD: unzstd },
      parsers: { timestampFromMilliseconds: (ms: bigint) => ms },
    })) as Array<Record<string, ColumnValue>>;
    if (columns.length === 0)
      for (const e of metadata.schema.slice(1))
        columns.push({ name: e.name, type: columnTypeOf(e), nullable: true, data: [] });
    for (const row of rows) for (const c of columns) c.data.push(row[c.name] ?? null);
  }
  return { body: writeParquet(columns), rows: columns[0]?.data.length ?? 0 };
}

/**
 * The raw limit beside compaction: each hour's data files read and decoded, their rows written again as one file
 * of the same format and codec (no key order, index, seal, staging or removal), into `out`.
 */
export async function rawRewrite(
  storage: ArchiveStorage,
  format: DataFormat,
  out: string,
): Promise<{ rows: number; files: number }> {
  const hours = new Map<string, string[]>();
  for await (const p of storage.list('table=')) {
    if (!parseDataFilePath(p)) continue;
    hours.set(hourFolderOf(p), [...(hours.get(hourFolderOf(p)) ?? []), p]);
  }
  const target = new FsArchiveStorage(out);
  let rows = 0;
  let files = 0;
  for (const [hour, paths] of hours) {
    const bodies = await Promise.all(paths.map(async (p) => (await storage.get(p)) as Buffer));
    const written = format === 'parquet' ? await rawParquet(bodies) : await rawAvro(bodies);
    await target.put(`${hour}raw.${format}`, written.body);
    files += paths.length;
    rows += written.rows;
  }
  return { rows, files };
}
