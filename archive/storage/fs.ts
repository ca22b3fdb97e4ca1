import { randomBytes } from 'node:crypto';
import { promises as fsp, readFile } from 'node:fs';
import { dirname, join } from 'node:path';
import { crashPoint } from '../../core/crash-points';
import type { ArchiveStorage } from './types';
import { assertSafePath, assertSafePrefix } from './safe-segment';

/** Temporary files start with '.', which no safe segment can (safeSegment encodes '.'). */
const TMP_PREFIX = '.tmp-';

function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

async function fsyncPath(path: string): Promise<void> {
  const handle = await fsp.open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** An archive rooted at an absolute directory. */
/** A folder's entry, in the order `list` walks them. */
interface Entry {
  path: string;
  isDirectory: boolean;
  key: string;
}

/** A folder being listed: its entries, the next one, and its subfolders read ahead. */
interface Frame {
  entries: Entry[];
  next: number;
  dirs: Entry[];
  ahead: number;
  reads: Map<string, Promise<Entry[]>>;
}

/** Subfolders of a folder read ahead of the walk. */
const READ_AHEAD = 16;

export class FsArchiveStorage implements ArchiveStorage {
  readonly kind = 'fs' as const;
  readonly root: string;

  constructor(private readonly dir: string) {
    this.root = `file://${dir}`;
  }

  private abs(path: string): string {
    assertSafePath(path);
    return join(this.dir, ...path.split('/'));
  }

  async put(path: string, body: Buffer): Promise<void> {
    const target = this.abs(path);
    const parent = dirname(target);
    const firstCreated = await fsp.mkdir(parent, { recursive: true });
    const tmp = join(parent, `${TMP_PREFIX}${randomBytes(8).toString('hex')}`);
    const handle = await fsp.open(tmp, 'w');
    try {
      await handle.writeFile(body);
      await handle.sync();
    } catch (err) {
      await handle.close().catch(() => undefined);
      await fsp.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await handle.close();
    // Test-only: a SIGKILL here leaves a complete temporary file and no target, the state of a
    // crash in the middle of writing a file.
    crashPoint('storage.fs.before-rename');
    try {
      await fsp.rename(tmp, target);
    } catch (err) {
      await fsp.unlink(tmp).catch(() => undefined);
      throw err;
    }
    // The rename is durable once the directory entry is; new directories need their own
    // entries in their parents synced as well, up to the first one that already existed.
    await this.syncDirs(parent, firstCreated);
  }

  async putIfAbsent(path: string, body: Buffer): Promise<boolean> {
    const target = this.abs(path);
    const parent = dirname(target);
    const firstCreated = await fsp.mkdir(parent, { recursive: true });
    const tmp = join(parent, `${TMP_PREFIX}${randomBytes(8).toString('hex')}`);
    try {
      await fsp.writeFile(tmp, body, { flush: true });
      // link(2) fails on an existing name, where rename(2) would replace it: the atomic "create if absent".
      await fsp.link(tmp, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      await fsp.unlink(tmp).catch(() => undefined);
    }
    await this.syncDirs(parent, firstCreated);
    return true;
  }

  async move(from: string, to: string): Promise<void> {
    const source = this.abs(from);
    const target = this.abs(to);
    const parent = dirname(target);
    const firstCreated = await fsp.mkdir(parent, { recursive: true });
    await fsp.rename(source, target);
    await this.syncDirs(parent, firstCreated);
    if (dirname(source) !== parent) await fsyncPath(dirname(source));
  }

  /** A new entry in `parent` made durable: its directory, and each directory made for it up to the first that was there. */
  private async syncDirs(parent: string, firstCreated: string | undefined): Promise<void> {
    await fsyncPath(parent);
    if (firstCreated !== undefined) {
      for (let d = parent; d !== dirname(d); d = dirname(d)) {
        await fsyncPath(dirname(d));
        if (d === firstCreated) break;
      }
    }
  }

  async get(path: string): Promise<Buffer | null> {
    try {
      return await readWhole(this.abs(path));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /**
   * Depth-first with directories sorted as "name/", which yields full paths in lexicographic order. One generator
   * over a stack of folders, not a generator per folder (each path passed up through every level), and the
   * subfolders of a folder read READ_AHEAD at a time ahead of the walk: a listing of an archive (a folder per table,
   * date and hour) otherwise waited for each `readdir` in turn.
   */
  async *list(prefix: string): AsyncIterable<string> {
    assertSafePrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    // Only where the prefix and the directory can still agree.
    const descend = (e: Entry): boolean =>
      e.isDirectory && (`${e.path}/`.startsWith(prefix) || prefix.startsWith(`${e.path}/`));
    const frame = (entries: Entry[]): Frame => ({
      entries,
      next: 0,
      dirs: entries.filter(descend),
      ahead: 0,
      reads: new Map(),
    });
    const stack = [frame(await this.entries(slash < 0 ? '' : prefix.slice(0, slash)))];
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as Frame;
      for (; top.ahead < top.dirs.length && top.reads.size < READ_AHEAD; top.ahead++) {
        const path = (top.dirs[top.ahead] as Entry).path;
        const read = this.entries(path);
        // Awaited when the walk gets there; meanwhile a failure must not be an unhandled rejection.
        read.catch(() => undefined);
        top.reads.set(path, read);
      }
      const entry = top.entries[top.next++];
      if (entry === undefined) stack.pop();
      else if (descend(entry)) {
        const read = top.reads.get(entry.path) ?? this.entries(entry.path);
        top.reads.delete(entry.path);
        stack.push(frame(await read));
      } else if (!entry.isDirectory && entry.path.startsWith(prefix)) yield entry.path;
    }
  }

  /** A folder's files and folders (relative paths), sorted as "name/" for folders; none if it is not a folder. */
  private async entries(rel: string): Promise<Entry[]> {
    const abs = rel === '' ? this.dir : join(this.dir, ...rel.split('/'));
    let dirents;
    try {
      dirents = await fsp.readdir(abs, { withFileTypes: true });
    } catch (err) {
      if (isNotFound(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
      throw err;
    }
    return dirents
      .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isFile()))
      .map((e) => ({
        path: rel === '' ? e.name : `${rel}/${e.name}`,
        isDirectory: e.isDirectory(),
        key: e.isDirectory() ? `${e.name}/` : e.name,
      }))
      .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  }

  async delete(path: string): Promise<void> {
    try {
      await fsp.unlink(this.abs(path));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/**
 * A whole file, through the callback readFile: it reads in libuv's thread pool without the FileHandle that
 * fs/promises opens, stats and closes on the main thread (measured: ~6 µs less CPU a small file; a compaction or a
 * verify reads three files a roll).
 */
function readWhole(path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => readFile(path, (err, body) => (err ? reject(err) : resolve(body))));
}
