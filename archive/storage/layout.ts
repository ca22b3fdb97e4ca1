import { z } from 'zod';
import { ValidationError } from '../../core/errors';
import { safeSegment } from './safe-segment';

/**
 * The archive's layout, shared by the archiver, the catalog, restore and replay:
 *
 *   table=<safe(table)>/date=YYYY-MM-DD/hour=HH/<safe(topic)>+<partition>+<first20>-<last20>.<ext>
 *   _index/<data file>.idx.json                                  per-file key index (docs/decisions/0033)
 *   <data file>.idx.json                                         the same, as archives before 0033 wrote it
 *   _manifest/<safe(topic)>/<partition>/<first20>-<last20>.json   roll progress and crash recovery
 *   _loss/<safe(topic)>/<partition>/<from20>-<to20>.json          offsets that left Kafka unarchived
 *   _loss-ack/<safe(topic)>/<partition>/<through20>.json           an operator acknowledged the losses up to an offset
 *   _purge/<data file>.json                                       a data file removed by retention
 *   <data file without .<ext>>~<g>.<ext> (+ its index)             generation g of a file rewritten by an erasure
 *   _erase/<data file>.json                                       the generations of a rewritten file, sealed
 *   _erasure/<safe(table)>/<key digest>.json                      the erasure ledger (docs/decisions/0013)
 *   table=…/date=…/hour=…/compacted~<c6>-<i4>-<n4>.<ext>          file i of n of compaction c of the hour
 *   _compact/table=…/date=…/hour=…/<c6>.json                      compaction c of an hour, sealed (decision 0037)
 *   _compact/table=…/date=…/hour=…/<c6>/<compacted file name>     a compacted file before it moves into place
 *   _index/table=…/date=…/_keys/<built13>-<cover8>/<bits>-<b5>.bin the day's key look-up index (decision 0038)
 *   _lock/<safe(table)>/<epoch20>.json                            who compacts or erases the table (decision 0037)
 *
 * <ext> is the data file's format (archive.format): `avro` (Avro object container) or `parquet`; a table's
 * archive may hold both, switching at a roll boundary (docs/decisions/0031).
 *
 * first20/last20 are the Kafka offsets of the roll, zero-padded to 20 digits so names sort by
 * offset and a rewrite of the same range replaces the same objects. Inside JSON documents offsets
 * are plain decimal strings (kafkajs' form); parsers accept either.
 */

/** The formats of data files, each with its file extension. */
export const DATA_FORMATS = ['avro', 'parquet'] as const;
export type DataFormat = (typeof DATA_FORMATS)[number];
export function dataExt(format: DataFormat): string {
  return `.${format}`;
}
export const INDEX_EXT = '.idx.json';
/** Key indexes live under their own root folder: query engines skip `_` folders (docs/decisions/0033). */
export const INDEX_DIR = '_index';
export const MANIFEST_DIR = '_manifest';
export const LOSS_DIR = '_loss';
export const LOSS_ACK_DIR = '_loss-ack';
/** Losses of the streams role: records of a followed DynamoDB stream that left it (24 h) before they were read. */
export const STREAM_LOSS_DIR = '_stream-loss';
export const STREAM_LOSS_ACK_DIR = '_stream-loss-ack';
export const PURGE_DIR = '_purge';
export const ERASE_DIR = '_erase';
export const ERASURE_DIR = '_erasure';
export const COMPACT_DIR = '_compact';
export const LOCK_DIR = '_lock';
/** The name every compacted data file starts with (a topic segment never holds a bare '~' before its digits). */
export const COMPACTED_NAME = 'compacted~';

const OFFSET = /^\d{1,20}$/;

/** A Kafka offset zero-padded to 20 digits. */
export function pad20(offset: string | bigint | number): string {
  const s = typeof offset === 'string' ? offset : offset.toString();
  if (!OFFSET.test(s)) throw new ValidationError(`not a Kafka offset: ${JSON.stringify(s)}`);
  return BigInt(s).toString().padStart(20, '0');
}

function assertPartition(partition: number): void {
  if (!Number.isInteger(partition) || partition < 0)
    throw new ValidationError(`not a partition: ${partition}`);
}

/** UTC `YYYY-MM-DD` and `HH` of an instant (the record's deletion time). */
export function utcDateHour(ms: number): { date: string; hour: string } {
  // Outside years 1970..9999 the ISO form changes shape (and the hour path with it).
  if (!Number.isFinite(ms) || ms < 0 || ms > 253_402_300_799_999)
    throw new ValidationError(`not a deletion time: ${ms}`);
  const iso = new Date(ms).toISOString(); // 2024-05-01T13:...
  return { date: iso.slice(0, 10), hour: iso.slice(11, 13) };
}

export function tablePrefix(table: string): string {
  return `table=${safeSegment(table)}/`;
}

export function hourPrefix(table: string, date: string, hour: string): string {
  return `${tablePrefix(table)}date=${date}/hour=${hour}/`;
}

export interface DataFileName {
  table: string;
  topic: string;
  partition: number;
  /** Any instant inside the UTC hour of the group (its records' deletion time). */
  deletedAtMs: number;
  first: string | bigint | number;
  last: string | bigint | number;
  /** The data file's format; the archiver's default is Avro. */
  format?: DataFormat;
}

/** The data file of one (table, UTC deletion hour) group of one roll of one partition. */
export function dataFilePath(f: DataFileName): string {
  assertPartition(f.partition);
  const { date, hour } = utcDateHour(f.deletedAtMs);
  return `${hourPrefix(f.table, date, hour)}${safeSegment(f.topic)}+${f.partition}+${pad20(f.first)}-${pad20(f.last)}${dataExt(f.format ?? 'avro')}`;
}

/** Where a data file's key index is written: `_index/<data file>.idx.json`, out of the engines' partition folders. */
export function indexPathFor(dataPath: string): string {
  return `${INDEX_DIR}/${dataPath}${INDEX_EXT}`;
}

/** Where archives written before docs/decisions/0033 keep a data file's key index: beside it. */
export function besideIndexPathFor(dataPath: string): string {
  return dataPath + INDEX_EXT;
}

/** Both places a data file's key index may be, in the order readers look: `_index/` first, then beside. */
export function indexPathsOf(dataPath: string): [string, string] {
  return [indexPathFor(dataPath), besideIndexPathFor(dataPath)];
}

/** The data file a key index path (either place) belongs to, or null for a path that is no key index. */
export function dataPathOfIndex(path: string): string | null {
  if (!isIndexPath(path)) return null;
  const beside = path.slice(0, -INDEX_EXT.length);
  return beside.startsWith(`${INDEX_DIR}/`) ? beside.slice(INDEX_DIR.length + 1) : beside;
}

/** Whether a path is a key index (at either place). */
export function isIndexPath(path: string): boolean {
  return path.endsWith(INDEX_EXT);
}

/** Whether a key index path is the pre-0033 place, beside its data file. */
export function isBesideIndexPath(path: string): boolean {
  return isIndexPath(path) && !path.startsWith(`${INDEX_DIR}/`);
}

/** The listing prefix of the key indexes of the data files under a data listing prefix (`table=…`). */
export function indexListingPrefix(dataPrefix: string): string {
  return `${INDEX_DIR}/${dataPrefix}`;
}

export function manifestPrefix(topic: string, partition: number): string {
  assertPartition(partition);
  return `${MANIFEST_DIR}/${safeSegment(topic)}/${partition}/`;
}

export function manifestPath(
  topic: string,
  partition: number,
  first: string | bigint,
  last: string | bigint,
): string {
  return `${manifestPrefix(topic, partition)}${pad20(first)}-${pad20(last)}.json`;
}

/** The durable record of a detected loss: offsets [from..to] aged out of Kafka before being archived. */
export function lossPath(
  topic: string,
  partition: number,
  from: string | bigint,
  to: string | bigint,
): string {
  assertPartition(partition);
  return `${LOSS_DIR}/${safeSegment(topic)}/${partition}/${pad20(from)}-${pad20(to)}.json`;
}

const DATA_PATH =
  /^table=([^/]+)\/date=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/([^/+]+)\+(\d+)\+(\d{20})-(\d{20})(?:~([1-9]\d{0,8}))?\.(avro|parquet)$/;
const COMPACTED_PATH =
  /^table=([^/]+)\/date=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/compacted~(\d{6})-(\d{4})-(\d{4})(?:~([1-9]\d{0,8}))?\.(avro|parquet)$/;

/** The format of a data file path, from its extension (null for anything else). */
export function formatOfPath(path: string): DataFormat | null {
  return path.endsWith('.parquet') ? 'parquet' : path.endsWith('.avro') ? 'avro' : null;
}

/**
 * Generation g (from 1) of a data file an erasure rewrote: a new name, because readers take rows
 * by row number and a file rewritten in place would leave its index pointing at shifted rows.
 * Generation 0 is the file the archiver wrote.
 */
export function generationPath(baseDataPath: string, generation: number): string {
  if (!Number.isInteger(generation) || generation < 0 || generation > 999_999_999)
    throw new ValidationError(`not a file generation: ${generation}`);
  if (generation === 0) return baseDataPath;
  const format = formatOfPath(baseDataPath);
  if (format === null) throw new ValidationError(`not a data file path: ${baseDataPath}`);
  const ext = dataExt(format);
  return `${baseDataPath.slice(0, -ext.length)}~${generation}${ext}`;
}

export interface ParsedDataPath {
  /** Still encoded; `decodeSegment` gives the name back unless it was shortened. */
  tableSegment: string;
  date: string;
  hour: string;
  topicSegment: string;
  partition: number;
  first: bigint;
  last: bigint;
  /** 0 for the file the archiver wrote, g for generation g of it (an erasure's rewrite). */
  generation: number;
  /** The path of generation 0: what manifests (or, for a compacted file, its compaction record) name. */
  base: string;
  format: DataFormat;
  /**
   * A compacted file (decision 0037): file `file` of `files` written by compaction `number` of its hour, which
   * holds rows of every topic and partition of the hour (`topicSegment` is then '', `partition` -1 and `first`,
   * `last` 0). Null for a file a roll wrote.
   */
  compaction: CompactedName | null;
}

export interface CompactedName {
  number: number;
  file: number;
  files: number;
}

/** The parts of a data file path, or null for anything else (index files, manifests, strays). */
export function parseDataFilePath(path: string): ParsedDataPath | null {
  const m = DATA_PATH.exec(path);
  if (!m) return parseCompactedPath(path);
  return {
    tableSegment: m[1] as string,
    date: m[2] as string,
    hour: m[3] as string,
    topicSegment: m[4] as string,
    partition: Number(m[5]),
    first: BigInt(m[6] as string),
    last: BigInt(m[7] as string),
    generation: m[8] === undefined ? 0 : Number(m[8]),
    base: m[8] === undefined ? path : path.replace(/~\d+(\.(?:avro|parquet))$/, '$1'),
    format: m[9] as DataFormat,
    compaction: null,
  };
}

function parseCompactedPath(path: string): ParsedDataPath | null {
  const m = COMPACTED_PATH.exec(path);
  if (!m) return null;
  return {
    tableSegment: m[1] as string,
    date: m[2] as string,
    hour: m[3] as string,
    topicSegment: '',
    partition: -1,
    first: 0n,
    last: 0n,
    generation: m[7] === undefined ? 0 : Number(m[7]),
    base: m[7] === undefined ? path : path.replace(/~\d+(\.(?:avro|parquet))$/, '$1'),
    format: m[8] as DataFormat,
    compaction: { number: Number(m[4]), file: Number(m[5]), files: Number(m[6]) },
  };
}

/** The hour folder (`table=…/date=…/hour=…/`) a data file path lies in. */
export function hourFolderOf(dataPath: string): string {
  return dataPath.slice(0, dataPath.lastIndexOf('/') + 1);
}

/** Compacted file `file` (from 1) of `files` written by compaction `number` of the hour folder `hour`. */
export function compactedFilePath(hour: string, c: CompactedName, format: DataFormat): string {
  for (const [n, max] of [
    [c.number, 999_999],
    [c.files, 9_999],
  ] as const)
    if (!Number.isInteger(n) || n < 1 || n > max) throw new ValidationError(`not a compaction number: ${n}`);
  if (!Number.isInteger(c.file) || c.file < 1 || c.file > c.files)
    throw new ValidationError(`not file ${c.file} of ${c.files}`);
  const pad = (n: number, w: number): string => String(n).padStart(w, '0');
  return `${hour}${COMPACTED_NAME}${pad(c.number, 6)}-${pad(c.file, 4)}-${pad(c.files, 4)}${dataExt(format)}`;
}

/** The listing prefix of an hour folder's (or any data prefix's) compaction records and staged files. */
export function compactListingPrefix(dataPrefix: string): string {
  return `${COMPACT_DIR}/${dataPrefix}`;
}

/** The record of compaction `number` of an hour folder (`table=…/date=…/hour=…/`): its seal, written first. */
export function compactionRecordPath(hour: string, number: number): string {
  return `${compactListingPrefix(hour)}${String(number).padStart(6, '0')}.json`;
}

/** Where a compacted file waits, written and read back, until it moves into its hour folder. */
export function stagedPathFor(compactedPath: string): string {
  const parsed = parseDataFilePath(compactedPath);
  if (!parsed?.compaction) throw new ValidationError(`not a compacted file: ${compactedPath}`);
  const hour = hourFolderOf(compactedPath);
  const name = compactedPath.slice(hour.length);
  return `${compactListingPrefix(hour)}${String(parsed.compaction.number).padStart(6, '0')}/${name}`;
}

const COMPACT_ENTRY =
  /^_compact\/(table=[^/]+\/date=\d{4}-\d{2}-\d{2}\/hour=\d{2}\/)(\d{6})(?:\.json|\/(compacted~[^/]+))$/;

/** A path under `_compact/`: the record of compaction `number` of `hour`, or (`staged`) a file it stages. */
export function parseCompactPath(
  path: string,
): { hour: string; number: number; staged: string | null } | null {
  const m = COMPACT_ENTRY.exec(path);
  if (!m) return null;
  const hour = m[1] as string;
  return { hour, number: Number(m[2]), staged: m[3] === undefined ? null : `${hour}${m[3]}` };
}

/** The day's key look-up indexes (decision 0038): `_index/table=…/date=…/_keys/`. */
export function dayIndexPrefix(table: string, date: string): string {
  return `${INDEX_DIR}/${tablePrefix(table)}date=${date}/_keys/`;
}

const DAY_INDEX =
  /^_index\/(table=[^/]+)\/date=(\d{4}-\d{2}-\d{2})\/_keys\/(\d{13}-[0-9a-f]{8})\/(\d{1,2})-(\d{5})\.bin$/;

/** A bucket of a day key index: its table folder, date, version (`<built ms>-<cover>`), bits and bucket. */
export function parseDayIndexPath(
  path: string,
): { tableSegment: string; date: string; version: string; bits: number; bucket: number } | null {
  const m = DAY_INDEX.exec(path);
  if (!m) return null;
  return {
    tableSegment: (m[1] as string).slice('table='.length),
    date: m[2] as string,
    version: m[3] as string,
    bits: Number(m[4]),
    bucket: Number(m[5]),
  };
}

/** Bucket `bucket` of 2^bits of version `version` of a day key index. */
export function dayIndexPath(
  table: string,
  date: string,
  version: string,
  bits: number,
  bucket: number,
): string {
  return `${dayIndexPrefix(table, date)}${version}/${bits}-${String(bucket).padStart(5, '0')}.bin`;
}

const MANIFEST_NAME = /\/(\d{20})-(\d{20})\.json$/;

export function parseManifestPath(path: string): { first: bigint; last: bigint } | null {
  const m = MANIFEST_NAME.exec(path);
  return m ? { first: BigInt(m[1] as string), last: BigInt(m[2] as string) } : null;
}

const offsetString = z.string().regex(OFFSET, 'expected a decimal Kafka offset');

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a SHA-256 in hex');

/** What a complete manifest says about one of its data files: enough to tell it was altered, truncated or swapped. */
export const FileDigestSchema = z.object({
  path: z.string().min(1),
  sha256: sha256Hex,
  bytes: z.number().int().min(0),
  rows: z.number().int().min(0),
  /** eventIDs of the file's first and last rows (row order), null for a file without rows. */
  firstEventID: z.string().nullable(),
  lastEventID: z.string().nullable(),
  /** The key index is the catalog restore and erase trust: it is sealed too. */
  index: z.object({ sha256: sha256Hex, bytes: z.number().int().min(0) }),
});
export type FileDigest = z.infer<typeof FileDigestSchema>;

/** A link to the previous complete manifest of the same partition (docs/decisions/0010). */
export const ChainLinkSchema = z.object({ path: z.string().min(1), sha256: sha256Hex });
export type ChainLink = z.infer<typeof ChainLinkSchema>;

/** Manifest of one roll: `writing` while its files are being (re)written, `complete` once all are durable. */
export const ManifestSchema = z.object({
  state: z.enum(['writing', 'complete']),
  first: offsetString,
  last: offsetString,
  files: z.array(z.string().min(1)),
  records: z.number().int().min(0),
  /**
   * Complete manifests only. `prev`: the partition's previous complete manifest (its path and the
   * SHA-256 of its bytes), null for the first roll of the partition; absent in manifests written
   * before the chain existed. `digests`: one per file of `files`, same order.
   */
  prev: ChainLinkSchema.nullable().optional(),
  digests: z.array(FileDigestSchema).optional(),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** A loss record (see lossPath). `detectedBy` says which check saw it. */
export const LossRecordSchema = z.object({
  topic: z.string().min(1),
  partition: z.number().int().min(0),
  from: offsetString,
  to: offsetString,
  records: z.string(),
  detectedAtMs: z.number().int(),
  detectedBy: z.enum(['assignment', 'monitor', 'redo']),
});
export type LossRecord = z.infer<typeof LossRecordSchema>;

/**
 * An operator's acknowledgement of a partition's losses (`ttlstream archive ack-loss`): every loss record of the
 * partition that ends at or before `through` is known and handled, so TtlstreamArchiveLoss clears for it. A loss
 * detected later ends beyond `through` (offsets only grow) and fires again. One per acknowledgement, kept: the trail.
 */
export function lossAckPath(topic: string, partition: number, through: string | bigint): string {
  assertPartition(partition);
  return `${LOSS_ACK_DIR}/${safeSegment(topic)}/${partition}/${pad20(through)}.json`;
}

export const LossAckSchema = z.object({
  topic: z.string().min(1),
  partition: z.number().int().min(0),
  /** The highest lost offset acknowledged: the largest `to` of the loss records it covers. */
  through: offsetString,
  /** The loss records newly acknowledged by this one (those of earlier acknowledgements are not repeated). */
  losses: z.array(
    z.object({ path: z.string().min(1), from: offsetString, to: offsetString, records: z.string() }),
  ),
  ackedAtMs: z.number().int(),
  ackedBy: z.string().min(1),
  note: z.string().optional(),
});
export type LossAck = z.infer<typeof LossAckSchema>;

/**
 * A loss of a followed stream's shard: the records after `after` (from the shard's start when null) left the stream
 * before the streams role read them. One per shard and starting point, so a loss detected twice writes one record.
 */
export function streamLossPath(table: string, label: string, shardId: string, after: string | null): string {
  return `${STREAM_LOSS_DIR}/${safeSegment(table)}/${safeSegment(label)}/${safeSegment(shardId)}/${after === null ? 'start' : safeSegment(after)}.json`;
}

export const StreamLossRecordSchema = z.object({
  table: z.string().min(1),
  streamArn: z.string().min(1),
  shardId: z.string().min(1),
  /** The last record published before the loss; null: nothing of the shard was read. */
  after: z.string().nullable(),
  /** trimmed: the checkpoint fell out of the stream; shard-gone / stream-gone: the rest vanished unread. */
  reason: z.enum(['trimmed', 'shard-gone', 'stream-gone']),
  detectedAtMs: z.number().int(),
});
export type StreamLossRecord = z.infer<typeof StreamLossRecordSchema>;

/**
 * An operator's acknowledgement of a table's stream losses (`ttlstream archive ack-loss --table`): every stream loss
 * of the table detected at or before `throughMs` is known and handled. One per acknowledgement, kept: the trail.
 */
export function streamLossAckPath(table: string, throughMs: number): string {
  return `${STREAM_LOSS_ACK_DIR}/${safeSegment(table)}/${String(throughMs).padStart(16, '0')}.json`;
}

export const StreamLossAckSchema = z.object({
  table: z.string().min(1),
  throughMs: z.number().int(),
  /** The loss records this acknowledgement covers. */
  losses: z.array(z.string().min(1)),
  ackedAtMs: z.number().int(),
  ackedBy: z.string().min(1),
  note: z.string().optional(),
});
export type StreamLossAck = z.infer<typeof StreamLossAckSchema>;

/** The record of a data file removed by the archive's retention (written before the file is deleted). */
export function purgePath(dataPath: string): string {
  return `${PURGE_DIR}/${dataPath}.json`;
}

export const PurgeRecordSchema = z.object({
  file: z.string().min(1),
  /** The complete manifest that sealed the file, with the SHA-256 of its bytes when purged. */
  manifest: ChainLinkSchema,
  /** The file's seal as that manifest gives it; null for a manifest from before sealing. */
  sealed: FileDigestSchema.nullable(),
  retentionDays: z.number().int().positive(),
  cutoffMs: z.number().int(),
  purgedAtMs: z.number().int(),
  actor: z.string().min(1),
});
export type PurgeRecord = z.infer<typeof PurgeRecordSchema>;

export const KeyIndexRowSchema = z.object({
  /** Canonical JSON of the item's Keys (DynamoDB JSON), as `canonicalJson` in schemas/. */
  key: z.string(),
  eventID: z.string().min(1),
  kind: z.enum(['remove', 'retract']),
  retractsEventID: z.string().min(1).optional(),
  deletedAtMs: z.number().int(),
  sequenceNumber: z.string(),
  /** Zero-based row number in the data file. */
  row: z.number().int().min(0),
  /** A compacted file's rows only (it holds every topic and partition of its hour): where the row was read. */
  topic: z.string().min(1).optional(),
  partition: z.number().int().min(0).optional(),
});
export type KeyIndexRow = z.infer<typeof KeyIndexRowSchema>;

/**
 * The catalog entry of one data file. A roll's file names its topic, partition and offsets; a compacted file
 * (decision 0037) names none (its rows do) and says which compaction wrote it, its rows in key order.
 */
export const KeyIndexSchema = z.object({
  file: z.string().min(1),
  table: z.string().min(1),
  topic: z.string().min(1).optional(),
  partition: z.number().int().min(0).optional(),
  first: offsetString.optional(),
  last: offsetString.optional(),
  compaction: z
    .object({
      number: z.number().int().min(1),
      file: z.number().int().min(1),
      files: z.number().int().min(1),
    })
    .optional(),
  rows: z.array(KeyIndexRowSchema),
});
export type KeyIndex = z.infer<typeof KeyIndexSchema>;

/** Parse a JSON document of the archive against its schema; a ValidationError names the path. */
export function parseArchiveJson<T>(schema: z.ZodType<T>, body: Buffer, path: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new ValidationError(`${path}: not JSON (${(err as Error).message})`);
  }
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new ValidationError(
      `${path}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'invalid'}`.trim(),
    );
  }
  return result.data;
}

export function encodeArchiveJson(doc: unknown): Buffer {
  return Buffer.from(JSON.stringify(doc) + '\n', 'utf8');
}
