import { availableParallelism } from 'node:os';
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { DataError, InternalError } from '../../core/errors';
import type { DataFileContext } from './types';

/**
 * The Parquet archive's encoding threads (docs/decisions/0031). Building a Parquet file (decoding
 * the rows, building columns and pages, zstd) costs several times what an Avro container costs,
 * and Avro's deflate already runs off the main thread on libuv's pool; on the main thread the
 * Parquet encoding stalled the consumer for the whole roll. So each data file of a roll is encoded
 * on one of a few worker threads: its row chunks move there and the file's bytes move back, both
 * without a copy (transferred ArrayBuffers). The threads start with the first Parquet roll and
 * hold the process open only while they have work.
 */

/** As many threads as CPUs, at least 2 (a roll per partition may be encoding) and at most 4, like libuv's pool. */
export const PARQUET_ENCODING_THREADS = Math.min(4, Math.max(2, availableParallelism()));

export interface EncodeRequest {
  id: number;
  /** The rows' Avro archive-row bytes, end to end; each owns its whole ArrayBuffer (it is transferred). */
  chunks: Uint8Array[];
  context: DataFileContext;
}

export type EncodeReply = { id: number; data: Uint8Array } | { id: number; error: string };

interface Job {
  resolve: (data: Buffer) => void;
  reject: (err: Error) => void;
}

/**
 * The thread's script beside this module: the built JavaScript in production; the TypeScript
 * source through tsx's require hook when this module itself runs from source (tsx, Jest).
 */
function startWorker(): Worker {
  const ext = extname(__filename);
  const script = join(__dirname, `parquet-worker${ext}`);
  if (ext === '.js') return new Worker(script);
  return new Worker(`require('tsx/cjs/api').register(); require(${JSON.stringify(script)});`, {
    eval: true,
    execArgv: [],
  });
}

class EncodingThread {
  private readonly worker = startWorker();
  private readonly jobs = new Map<number, Job>();
  dead = false;

  constructor() {
    this.worker.on('message', (reply: EncodeReply) => this.settle(reply));
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`exited with code ${code}`)));
    // After the listeners: adding a 'message' listener refs the thread's port again.
    this.worker.unref();
  }

  get load(): number {
    return this.jobs.size;
  }

  run(id: number, request: EncodeRequest, transfer: ArrayBuffer[]): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      this.jobs.set(id, { resolve, reject });
      // Held open while it has work: a roll waiting for its file must not see the process end under it.
      if (this.jobs.size === 1) this.worker.ref();
      this.worker.postMessage(request, transfer);
    });
  }

  private take(id: number): Job | undefined {
    const job = this.jobs.get(id);
    this.jobs.delete(id);
    if (this.jobs.size === 0) this.worker.unref();
    return job;
  }

  private settle(reply: EncodeReply): void {
    const job = this.take(reply.id);
    if (!job) return;
    if ('error' in reply) job.reject(new DataError(`Parquet encoding: ${reply.error}`));
    else job.resolve(Buffer.from(reply.data.buffer, reply.data.byteOffset, reply.data.byteLength));
  }

  /** The thread died: its jobs fail (their rolls are retried) and the pool starts a new one. */
  private fail(err: Error): void {
    if (this.dead) return;
    this.dead = true;
    for (const id of [...this.jobs.keys()])
      this.take(id)?.reject(
        new InternalError(`Parquet encoding thread failed: ${err.message}`, { cause: err }),
      );
  }

  terminate(): Promise<number> {
    this.dead = true;
    return this.worker.terminate();
  }
}

class EncodingPool {
  private threads: EncodingThread[] = [];
  private nextId = 1;

  /**
   * Starts the threads now (the archiver does, when it starts with archive.format parquet): loading
   * their modules takes a fraction of a second of CPU each, better spent while the consumer joins its
   * group than in the first roll.
   */
  start(): void {
    this.threads = this.threads.filter((t) => !t.dead);
    while (this.threads.length < PARQUET_ENCODING_THREADS) this.threads.push(new EncodingThread());
  }

  /**
   * Starts the threads and has each encode an empty file: resolves once every one has loaded its
   * modules and answered (a thread started from TypeScript source compiles them first, which takes
   * seconds on a busy machine).
   */
  async warm(): Promise<void> {
    this.start();
    await Promise.all(
      this.threads.map((thread) => {
        const id = this.nextId++;
        return thread.run(id, { id, chunks: [], context: { ttl: null } }, []);
      }),
    );
  }

  /** One Parquet file of these row chunks; the chunks' memory moves to the encoding thread. */
  encode(chunks: Uint8Array[], context: DataFileContext): Promise<Buffer> {
    this.start();
    const thread = this.threads.reduce((a, b) => (b.load < a.load ? b : a));
    const id = this.nextId++;
    return thread.run(id, { id, chunks, context }, transferable(chunks));
  }

  /** Stops every thread (tests; a process that exits does not need it). */
  async close(): Promise<void> {
    const threads = this.threads;
    this.threads = [];
    await Promise.all(threads.map((t) => t.terminate()));
  }
}

/** The chunks' ArrayBuffers, each of which must be the chunk's alone. */
function transferable(chunks: Uint8Array[]): ArrayBuffer[] {
  return chunks.map((c) => {
    if (c.byteOffset !== 0 || !(c.buffer instanceof ArrayBuffer))
      throw new InternalError('a Parquet row chunk that does not own its ArrayBuffer cannot be transferred');
    return c.buffer;
  });
}

export const parquetEncodingPool = new EncodingPool();
