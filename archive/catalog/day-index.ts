import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../../core/errors';
import { dayIndexPath, parseDayIndexPath } from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';

/**
 * The day key index (docs/decisions/0038): which of a day's data files hold a key, answered by reading one small
 * object per day instead of every file's key index. Built by the compaction once every hour of the day is compacted.
 *
 * It holds key digests (the erasure ledger's `keyDigest`, cut to 8 bytes), never keys: an erasure has nothing to
 * remove from it, and a collision of the cut digests only costs a file read that finds nothing. A version is 2^bits
 * buckets `_index/table=…/date=…/_keys/<built13>-<cover8>/<bits>-<bucket5>.bin`, a digest in the bucket its top
 * bits name; each bucket is `TTLSTREAM-KEYS-1\n`, a JSON line naming the files it covers (generation 0 names), then
 * sorted 10-byte entries: the digest's first 8 bytes and the file's number in that list (big-endian).
 * A file the index does not cover (a late roll, a later compaction) is read as before: the index only ever narrows.
 */

const MAGIC = Buffer.from('TTLSTREAM-KEYS-1\n', 'latin1');
const ENTRY = 10;
/** Entries per bucket the builder aims at (about 256 KiB). */
const BUCKET_ENTRIES = 26_000;
const MAX_BITS = 16;

const HeaderSchema = z.object({
  table: z.string().min(1),
  date: z.string(),
  files: z.array(z.string().min(1)),
  bits: z.number().int().min(0).max(MAX_BITS),
  bucket: z.number().int().min(0),
  entries: z.number().int().min(0),
});
export type DayIndexHeader = z.infer<typeof HeaderSchema>;

/** The 8-byte prefix of a key digest (64 hex). */
function prefixOf(keyDigest: string): Buffer {
  return Buffer.from(keyDigest.slice(0, 16), 'hex');
}

function bucketOf(prefix: Buffer, bits: number): number {
  return bits === 0 ? 0 : prefix.readUInt32BE(0) >>> (32 - bits);
}

/** The bucket a key digest (64 hex) is in, of 2^bits. */
export function bucketOfDigest(keyDigest: string, bits: number): number {
  return bucketOf(prefixOf(keyDigest), bits);
}

/** 2^bits buckets (bits ≤ MAX_BITS). */
function bucketCount(bits: number): number {
  return 0x1_0000 >>> (MAX_BITS - bits);
}

/** The bits of a day index of `entries` entries: buckets of about BUCKET_ENTRIES. */
export function bitsFor(entries: number): number {
  let bits = 0;
  while (bits < MAX_BITS && entries / bucketCount(bits) > BUCKET_ENTRIES) bits++;
  return bits;
}

/** The digest of the files a version covers, its name's second part: a planner tells a stale index by it. */
export function dayIndexCover(files: readonly string[]): string {
  return createHash('sha256').update(files.join('\n')).digest('hex').slice(0, 8);
}

/** A version's name: when it was built, and a digest of the files it covers. */
export function dayIndexVersion(builtAtMs: number, files: readonly string[]): string {
  return `${String(builtAtMs).padStart(13, '0')}-${dayIndexCover(files)}`;
}

/**
 * The buckets of a day index over `files` (generation 0 names), from each file's key digests: path and bytes of
 * each, in bucket order. Pure.
 */
export function buildDayIndex(
  table: string,
  date: string,
  files: readonly string[],
  digestsOf: ReadonlyArray<Iterable<string>>,
  builtAtMs: number,
): Array<{ path: string; body: Buffer }> {
  if (files.length > 0xffff)
    throw new ValidationError(`a day index covers at most 65535 files, not ${files.length}`);
  // Every entry in one buffer (a day has hundreds of thousands: a Buffer each cost ten times their bytes).
  const parts: Buffer[] = [];
  digestsOf.forEach((digests, file) => {
    const unique = new Set(digests);
    const part = Buffer.alloc(unique.size * ENTRY);
    let at = 0;
    for (const d of unique) {
      prefixOf(d).copy(part, at);
      part.writeUInt16BE(file, at + 8);
      at += ENTRY;
    }
    parts.push(part);
  });
  const all = Buffer.concat(parts);
  const order = sortedEntries(all);
  const bits = bitsFor(order.length);
  const buckets: number[][] = Array.from({ length: bucketCount(bits) }, () => []);
  for (const i of order) buckets[bucketOf(all.subarray(i * ENTRY), bits)]?.push(i);
  const version = dayIndexVersion(builtAtMs, files);
  return buckets.map((list, bucket) => {
    const header: DayIndexHeader = { table, date, files: [...files], bits, bucket, entries: list.length };
    const head = Buffer.concat([MAGIC, Buffer.from(`${JSON.stringify(header)}\n`, 'utf8')]);
    const body = Buffer.alloc(head.length + list.length * ENTRY);
    head.copy(body, 0);
    list.forEach((i, n) => all.copy(body, head.length + n * ENTRY, i * ENTRY, (i + 1) * ENTRY));
    return { path: dayIndexPath(table, date, version, bits, bucket), body };
  });
}

/** The entries of `all` (ENTRY bytes each) in byte order: by the prefix's two big-endian halves, then the file. */
function sortedEntries(all: Buffer): Uint32Array {
  const n = all.length / ENTRY;
  const hi = new Uint32Array(n);
  const lo = new Uint32Array(n);
  const file = new Uint16Array(n);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    hi[i] = all.readUInt32BE(i * ENTRY);
    lo[i] = all.readUInt32BE(i * ENTRY + 4);
    file[i] = all.readUInt16BE(i * ENTRY + 8);
    order[i] = i;
  }
  return order.sort(
    (a, b) =>
      (hi[a] as number) - (hi[b] as number) ||
      (lo[a] as number) - (lo[b] as number) ||
      (file[a] as number) - (file[b] as number),
  );
}

/** A bucket read back: its header and its entries. */
export interface DayIndexBucket {
  header: DayIndexHeader;
  entries: Buffer;
}

export function parseDayIndexBucket(body: Buffer, path: string): DayIndexBucket {
  if (!body.subarray(0, MAGIC.length).equals(MAGIC))
    throw new ValidationError(`${path}: not a day key index`);
  const end = body.indexOf(0x0a, MAGIC.length);
  if (end < 0) throw new ValidationError(`${path}: no header`);
  let raw: unknown;
  try {
    raw = JSON.parse(body.subarray(MAGIC.length, end).toString('utf8'));
  } catch {
    throw new ValidationError(`${path}: header is not JSON`);
  }
  const parsed = HeaderSchema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(`${path}: bad header`);
  const entries = body.subarray(end + 1);
  if (entries.length !== parsed.data.entries * ENTRY)
    throw new ValidationError(
      `${path}: ${entries.length} entry bytes where its header says ${parsed.data.entries}`,
    );
  return { header: parsed.data, entries };
}

/** Numbers (in the header's list) of the files whose entry for this digest is in the bucket. */
export function filesOfDigest(bucket: DayIndexBucket, keyDigest: string): number[] {
  const prefix = prefixOf(keyDigest);
  const n = bucket.header.entries;
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = mid * ENTRY;
    if (Buffer.compare(bucket.entries.subarray(at, at + 8), prefix) < 0) lo = mid + 1;
    else hi = mid;
  }
  const out: number[] = [];
  for (let i = lo; i < n; i++) {
    const at = i * ENTRY;
    if (!bucket.entries.subarray(at, at + 8).equals(prefix)) break;
    out.push(bucket.entries.readUInt16BE(at + 8));
  }
  return out;
}

/** The newest complete version among a day's bucket paths (all 2^bits buckets present), or null. */
export function newestDayIndex(
  paths: readonly string[],
): { version: string; bits: number; paths: string[] } | null {
  const versions = new Map<string, { bits: number; paths: Map<number, string> }>();
  for (const p of paths) {
    const parsed = parseDayIndexPath(p);
    if (!parsed) continue;
    const v = versions.get(parsed.version) ?? { bits: parsed.bits, paths: new Map<number, string>() };
    if (v.bits === parsed.bits) v.paths.set(parsed.bucket, p);
    versions.set(parsed.version, v);
  }
  const complete = [...versions]
    .filter(([, v]) => v.paths.size === bucketCount(v.bits))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const last = complete.at(-1);
  if (!last) return null;
  const [version, { bits, paths: byBucket }] = last;
  return { version, bits, paths: [...byBucket.entries()].sort(([a], [b]) => a - b).map(([, p]) => p) };
}

/** What a day index says of some digests: the files it covers, and those of them that hold any of the digests. */
export interface DayLookup {
  covered: Set<string>;
  holding: Set<string>;
  /** Bucket objects read. */
  reads: number;
}

/** Look the digests up in the newest complete version among `paths` (a day's buckets); null when there is none. */
export async function lookUpDay(
  storage: ArchiveStorage,
  paths: readonly string[],
  digests: ReadonlySet<string>,
): Promise<DayLookup | null> {
  const version = newestDayIndex(paths);
  if (!version) return null;
  const wanted = new Map<number, string[]>();
  for (const d of digests) {
    const b = bucketOfDigest(d, version.bits);
    wanted.set(b, [...(wanted.get(b) ?? []), d]);
  }
  const out: DayLookup = { covered: new Set(), holding: new Set(), reads: 0 };
  // Any bucket names the covered files: with no digest to look up, the first one says them.
  if (wanted.size === 0) wanted.set(0, []);
  for (const [b, list] of wanted) {
    const path = version.paths[b] as string;
    const body = await storage.get(path);
    // A version being replaced (its buckets removed after the new one is whole): the files are read instead.
    if (body === null) return null;
    out.reads += 1;
    const bucket = parseDayIndexBucket(body, path);
    for (const f of bucket.header.files) out.covered.add(f);
    for (const d of list)
      for (const n of filesOfDigest(bucket, d)) {
        const f = bucket.header.files[n];
        if (f !== undefined) out.holding.add(f);
      }
  }
  return out;
}
