import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
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
      return await fsp.readFile(this.abs(path));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<string> {
    assertSafePrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? '' : prefix.slice(0, slash);
    yield* this.walk(base, prefix);
  }

  /** Depth-first with directories sorted as "name/", which yields full paths in lexicographic order. */
  private async *walk(rel: string, prefix: string): AsyncIterable<string> {
    const abs = rel === '' ? this.dir : join(this.dir, ...rel.split('/'));
    let entries;
    try {
      entries = await fsp.readdir(abs, { withFileTypes: true });
    } catch (err) {
      if (isNotFound(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw err;
    }
    const keyed = entries
      .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isFile()))
      .map((e) => ({ e, key: e.isDirectory() ? `${e.name}/` : e.name }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { e } of keyed) {
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        const asDir = `${path}/`;
        // Descend only where the prefix and the directory can still agree.
        if (asDir.startsWith(prefix) || prefix.startsWith(asDir)) yield* this.walk(path, prefix);
      } else if (path.startsWith(prefix)) {
        yield path;
      }
    }
  }

  async delete(path: string): Promise<void> {
    try {
      await fsp.unlink(this.abs(path));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
