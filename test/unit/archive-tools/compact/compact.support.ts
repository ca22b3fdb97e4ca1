import { LOCK_DIR } from '../../../../archive/storage';
import { MemoryStorage } from '../../../support/archive-fixture';

/** Memory archives for the compaction unit tests: copies, locks forgotten, and a crash after any step. */

/** A copy of a memory archive. */
export function copyOf(storage: MemoryStorage): MemoryStorage {
  const copy = new MemoryStorage();
  for (const [k, v] of storage.objects) copy.objects.set(k, Buffer.from(v));
  return copy;
}

/** Forget the table locks (what a dead holder's lapse does): a test's simulated crash leaves them held. */
export function dropLocks(storage: MemoryStorage): void {
  for (const k of [...storage.objects.keys()]) if (k.startsWith(`${LOCK_DIR}/`)) storage.objects.delete(k);
}

/**
 * A memory archive that stops dead after `after` writes (put, delete, move: the crash after that step), as a
 * SIGKILL would: every later call fails. `writes` counts them (to know how many steps a run has).
 */
export class CrashingStorage extends MemoryStorage {
  writes = 0;
  constructor(
    from: MemoryStorage,
    private readonly after = Infinity,
  ) {
    super();
    for (const [k, v] of from.objects) this.objects.set(k, Buffer.from(v));
  }
  private step(): void {
    if (this.writes >= this.after) throw new Error('crashed');
  }
  override async put(path: string, body: Buffer): Promise<void> {
    this.step();
    this.writes += 1;
    await super.put(path, body);
  }
  override async delete(path: string): Promise<void> {
    this.step();
    this.writes += 1;
    await super.delete(path);
  }
  override async move(from: string, to: string): Promise<void> {
    this.step();
    this.writes += 1;
    await super.move(from, to);
  }
  override async putIfAbsent(path: string, body: Buffer): Promise<boolean> {
    this.step();
    this.writes += 1;
    return super.putIfAbsent(path, body);
  }
  override async get(path: string): Promise<Buffer | null> {
    this.step();
    return super.get(path);
  }
  override async *list(prefix: string): AsyncIterable<string> {
    this.step();
    yield* super.list(prefix);
  }
}
