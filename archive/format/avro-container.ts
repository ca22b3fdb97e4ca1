import avro, { type Type } from 'avsc';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { DataError, InternalError, ValidationError } from '../../core/errors';

/**
 * Avro object container files, built in memory: the same bytes avsc's BlockEncoder writes (magic,
 * metadata map with `avro.schema` and `avro.codec`, sync marker, then blocks of
 * count/size/deflated data/sync), but without a stream per file, and with every block deflated in
 * parallel on the libuv pool. Readers use avsc's BlockDecoder (or any Avro implementation).
 */

const MAGIC = Buffer.from('Obj\x01', 'latin1');
const HEADER_TYPE = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const LONG = avro.Type.forSchema('long');
const deflateRaw = promisify(zlib.deflateRaw);

/** Rows and blocks of a container file whose framing is whole; throws ValidationError otherwise. */
export function checkContainerFraming(file: Buffer, path: string): { rows: number; blocks: number } {
  if (file.length < 4 || !file.subarray(0, 4).equals(MAGIC))
    throw new ValidationError(`${path}: not an Avro container file`);
  const header = HEADER_TYPE.decode(file, 0) as { value?: { sync: Buffer }; offset: number };
  if (header.offset < 0 || !header.value) throw new ValidationError(`${path}: truncated Avro header`);
  const sync = header.value.sync;
  let pos = header.offset;
  let rows = 0;
  let blocks = 0;
  while (pos < file.length) {
    const count = LONG.decode(file, pos) as { value?: number; offset: number };
    const size =
      count.offset < 0 ? count : (LONG.decode(file, count.offset) as { value?: number; offset: number });
    if (count.offset < 0 || size.offset < 0 || count.value === undefined || size.value === undefined)
      throw new ValidationError(`${path}: truncated after block ${blocks}`);
    if (count.value < 0 || size.value < 0) throw new ValidationError(`${path}: corrupt block ${blocks}`);
    const end = size.offset + size.value;
    if (end + 16 > file.length) throw new ValidationError(`${path}: truncated in block ${blocks}`);
    if (!file.subarray(end, end + 16).equals(sync))
      throw new ValidationError(`${path}: bad sync marker after block ${blocks}`);
    rows += count.value;
    blocks += 1;
    pos = end + 16;
  }
  return { rows, blocks };
}

/**
 * A block deflated in one pass on the libuv pool: the output buffer holds the whole block's output. With zlib's
 * default output buffer (16 KiB) a block is deflated in ~16 KiB output steps, each next step started by a callback on
 * the main thread, so a block advanced only while the main thread was free between records, and each step cost the
 * main thread a callback (measured over 100k records: zlib's main-thread work 42 ms with 16 KiB steps, 15 ms in one
 * pass). Deflate's worst case adds a few bytes per 16 KiB, which the buffer covers (a larger output takes one more
 * step). The output is a view of that buffer, so it is copied out (a copy of ~200 KiB): a block waits for the other
 * blocks of its file, and a megabyte held per block meanwhile would double what a roll being finished holds.
 */
async function deflateBlock(data: Buffer, level: number | undefined): Promise<Buffer> {
  const chunkSize = Math.max(64 * 1024, data.length + (data.length >> 10) + 1024);
  const out = await deflateRaw(data, { ...(level === undefined ? {} : { level }), chunkSize });
  return out.buffer.byteLength > 2 * out.length ? Buffer.from(out) : out;
}

function copyInto(buf: Buffer, pos: number, encoded: Buffer): number {
  return pos + encoded.copy(buf, pos);
}

export type ContainerCodec = 'deflate' | 'null';

export interface ContainerWriterOptions {
  codec?: ContainerCodec;
  /** Uncompressed bytes per block (avsc's default is 64 KiB). */
  blockBytes?: number;
  /** Extra header metadata (values are stored as bytes). */
  metadata?: Record<string, string>;
}

interface SealedBlock {
  count: number;
  data: Buffer;
  /** The whole buffer `data` is a view of (given back to the pool once deflated). */
  buf: Buffer;
}

/**
 * Full-size block buffers, reused. A fresh buffer of a megabyte costs a page fault per 4 KiB on
 * first touch (measured: about as much CPU as the rest of the copy into it); a reused one is
 * already mapped. Only deflated blocks come back (their bytes are not the file's), and only once
 * their deflate has finished with them.
 */
class BlockPool {
  private readonly free: Buffer[] = [];

  constructor(private readonly max: number) {}

  take(bytes: number): Buffer {
    const i = this.free.findIndex((b) => b.length === bytes);
    if (i < 0) return Buffer.allocUnsafe(bytes);
    const [buf] = this.free.splice(i, 1);
    return buf as Buffer;
  }

  give(buf: Buffer): void {
    if (this.free.length < this.max) this.free.push(buf);
  }
}
/** 24 blocks of the archiver's 1 MiB: ~25 MiB at most kept for reuse. */
const BLOCK_POOL = new BlockPool(24);
const EMPTY = Buffer.alloc(0);

/** Accumulates rows of one Avro type and produces one container file. One use per file. */
export class ContainerWriter {
  private readonly codec: ContainerCodec;
  private readonly blockBytes: number;
  private readonly sealed: SealedBlock[] = [];
  private buf: Buffer;
  private pos = 0;
  private count = 0;
  private rows = 0;
  private raw = 0;

  constructor(
    private readonly type: Type,
    private readonly options: ContainerWriterOptions = {},
  ) {
    this.codec = options.codec ?? 'deflate';
    this.blockBytes = options.blockBytes ?? 64 * 1024;
    this.buf = EMPTY;
  }

  /** A full block's buffer: the block plus room for the row that crosses its end. */
  private get fullBytes(): number {
    return this.blockBytes + 64 * 1024;
  }

  /**
   * Room for `extra` more bytes in the current block. A file's first block starts small and grows
   * (a roll has a file per table and hour, many of them small); once a file has filled a block,
   * its next ones start at full size, from the pool.
   */
  private ensure(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.buf.length) return;
    const small = Math.min(this.blockBytes, 64 * 1024) + 1024;
    const bytes =
      this.sealed.length === 0 && need <= small
        ? small
        : need <= this.fullBytes
          ? this.fullBytes
          : Math.max(this.buf.length * 2, need + 1024);
    const grown =
      bytes === this.fullBytes && this.codec === 'deflate'
        ? BLOCK_POOL.take(bytes)
        : Buffer.allocUnsafe(bytes);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** Rows appended so far. */
  get rowCount(): number {
    return this.rows;
  }

  /** Uncompressed Avro bytes appended so far. */
  get rawBytes(): number {
    return this.raw;
  }

  append(value: unknown): void {
    for (;;) {
      const end = this.type.encode(value, this.buf, this.pos);
      if (end >= 0) {
        this.raw += end - this.pos;
        this.pos = end;
        break;
      }
      // Too small: grow by what is missing (avsc reports it as a negative number) and retry.
      this.ensure(Math.max(-end, this.buf.length - this.pos + 1) + 1024);
    }
    this.count += 1;
    this.rows += 1;
    if (this.pos >= this.blockBytes) this.seal();
  }

  /** Append a row already encoded with this writer's type (`type.toBuffer(row)`). */
  appendEncoded(encoded: Buffer): void {
    this.appendWith(encoded.length, encoded, copyInto);
  }

  /**
   * Append one row that `write(buf, pos, arg)` encodes into the block at `pos`, returning its end
   * (-1: it did not fit). The block is first grown to hold `maxBytes` more, the row's bound.
   * `arg` rather than a closure, so that nothing is allocated per row.
   */
  appendWith<T>(maxBytes: number, arg: T, write: (buf: Buffer, pos: number, arg: T) => number): void {
    this.ensure(maxBytes);
    const end = write(this.buf, this.pos, arg);
    if (end < 0) throw new InternalError(`a row needed more than its ${maxBytes} bytes`);
    this.raw += end - this.pos;
    this.pos = end;
    this.count += 1;
    this.rows += 1;
    if (this.pos >= this.blockBytes) this.seal();
  }

  private seal(): void {
    if (this.count === 0) return;
    // Hand the filled buffer over, rather than copying the block out; the next block's buffer is
    // taken when its first row comes (none at the end of the file).
    this.sealed.push({ count: this.count, data: this.buf.subarray(0, this.pos), buf: this.buf });
    this.buf = EMPTY;
    this.pos = 0;
    this.count = 0;
  }

  /** The complete container file; deflated blocks at `level` (zlib's default, 6, when absent). */
  async finish(level?: number): Promise<Buffer> {
    this.seal();
    const sync = randomBytes(16);
    const schema = JSON.stringify(this.type.schema({ exportAttrs: true }));
    const meta: Record<string, Buffer> = {
      'avro.schema': Buffer.from(schema),
      'avro.codec': Buffer.from(this.codec),
    };
    for (const [k, v] of Object.entries(this.options.metadata ?? {})) {
      if (k.startsWith('avro.')) throw new InternalError(`reserved Avro metadata key: ${k}`);
      meta[k] = Buffer.from(v);
    }
    const parts: Buffer[] = [HEADER_TYPE.toBuffer({ magic: MAGIC, meta, sync })];
    const bodies = await Promise.all(
      this.sealed.map((b) =>
        this.codec === 'deflate' ? deflateBlock(b.data, level) : Promise.resolve(b.data),
      ),
    );
    this.sealed.forEach((b, i) => {
      const body = bodies[i] as Buffer;
      parts.push(LONG.toBuffer(b.count), LONG.toBuffer(body.length), body, sync);
    });
    if (this.codec === 'deflate') {
      // Deflated: the raw blocks are no longer needed, and nothing else holds them.
      for (const b of this.sealed) if (b.buf.length === this.fullBytes) BLOCK_POOL.give(b.buf);
    }
    this.sealed.length = 0;
    return Buffer.concat(parts);
  }
}

/** Encode `rows` as one container file. */
export async function encodeContainer(
  type: Type,
  rows: Iterable<unknown>,
  options?: ContainerWriterOptions,
): Promise<Buffer> {
  const writer = new ContainerWriter(type, options);
  for (const row of rows) writer.append(row);
  return writer.finish();
}

export interface DecodedContainer<T> {
  /** The writer schema from the header. */
  schema: unknown;
  codec: string;
  metadata: Record<string, Buffer>;
  rows: T[];
}

/** Read a whole container file with avsc's decoder (deflate and null codecs). */
export async function decodeContainer<T = unknown>(
  file: Buffer,
  options: { readerSchema?: Type } = {},
): Promise<DecodedContainer<T>> {
  const decoder = new avro.streams.BlockDecoder(
    options.readerSchema ? { readerSchema: options.readerSchema } : {},
  );
  let header: { schema: unknown; codec: string; metadata: Record<string, Buffer> } | undefined;
  decoder.on('metadata', (type: Type, codec: string, h: { meta: Record<string, Buffer> }) => {
    header = { schema: type.schema({ exportAttrs: true }), codec, metadata: h.meta };
  });
  const rows: T[] = [];
  await new Promise<void>((resolve, reject) => {
    decoder.on('data', (row: T) => rows.push(row));
    decoder.on('error', reject);
    decoder.on('end', () => resolve());
    Readable.from([file]).on('error', reject).pipe(decoder);
  });
  if (!header) throw new DataError('not an Avro container file (no header)');
  return { ...header, rows };
}
