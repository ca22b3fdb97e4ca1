import type { ArchiveStorage } from '../../../archiver/storage';
import { assertSafePath, assertSafePrefix } from '../../../archiver/storage';

/** An in-memory archive that records every operation, for tests of write order and recovery. */
export class MemoryStorage implements ArchiveStorage {
  readonly kind = 'fs' as const;
  readonly root = 'memory://';
  readonly objects = new Map<string, Buffer>();
  readonly ops: string[] = [];
  /** Make the next put whose path matches fail once. */
  failOnce: RegExp | null = null;

  async put(path: string, body: Buffer): Promise<void> {
    assertSafePath(path);
    if (this.failOnce?.test(path)) {
      this.failOnce = null;
      throw new Error(`injected failure on ${path}`);
    }
    this.ops.push(`put ${path}`);
    this.objects.set(path, Buffer.from(body));
  }

  async get(path: string): Promise<Buffer | null> {
    assertSafePath(path);
    return this.objects.get(path) ?? null;
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
