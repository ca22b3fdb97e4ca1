import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { ConflictError, LeaseLostError } from '../core/errors';
import { localOwnerId, ownerIsProvablyDead } from '../core/process-identity';
import { LOCK_DIR, encodeArchiveJson, parseArchiveJson } from './storage/layout';
import { safeSegment } from './storage/safe-segment';
import type { ArchiveStorage } from './storage/types';

/**
 * The table lock of the archive (docs/decisions/0037): one compaction or one erasure of a table at a time, whichever
 * process runs it (the archivers' schedule, `archive compact`, `archive erase`). It lives in the archive, so it
 * needs nothing an archiver or an operator does not have already (no control-table write, no new IAM action).
 *
 * A lease in epochs: `_lock/<table>/<epoch20>.json`, the newest epoch being the lock's state. It is taken by
 * creating the next epoch with `putIfAbsent` (atomic on both backends: link(2), S3 If-None-Match), only once the
 * newest is released, expired (plus SKEW_MS, for clocks), or held by a process this machine's kernel says is gone
 * (decision 0020). The holder renews its own epoch every third of the lease and counts itself holder only while its
 * last renewal that came back in time is young enough; it checks `assertValid()` before each step it guards. A
 * waiter leaves a note under `_lock/<table>/wait/`, on which a compaction hands the table over between two hours.
 */

export const LOCK_LEASE_MS = 60_000;
/** Clocks of two machines may differ by this much: the holder stops this early, a taker waits this long after. */
const SKEW_MS = 5_000;
/** How often a waiter looks at the lock again. */
const WAIT_POLL_MS = 500;

const LockRecordSchema = z.object({
  table: z.string().min(1),
  epoch: z.number().int().min(1),
  owner: z.string().min(1),
  purpose: z.enum(['compact', 'erase']),
  acquiredAtMs: z.number().int(),
  expiresAtMs: z.number().int(),
  released: z.boolean(),
});
export type LockRecord = z.infer<typeof LockRecordSchema>;

const WaitNoteSchema = z.object({ owner: z.string().min(1), purpose: z.string(), atMs: z.number().int() });

export interface LockOptions {
  table: string;
  purpose: LockRecord['purpose'];
  /** Default: a fresh owner id of this process (decision 0020's form, so a dead holder is seen as dead). */
  owner?: string;
  leaseMs?: number;
  now?: () => number;
}

/** A lock this process holds. */
export interface HeldLock {
  readonly table: string;
  readonly owner: string;
  /** Aborted once the lock is lost (a renewal that failed or came back too late). */
  readonly signal: AbortSignal;
  /** Throws LeaseLostError unless the lock is surely still ours: before each step it guards. */
  assertValid(): void;
  /** Whether someone waits for the table (a compaction then hands it over between two units). */
  waited(): Promise<boolean>;
  release(): Promise<void>;
}

function lockDir(table: string): string {
  return `${LOCK_DIR}/${safeSegment(table)}/`;
}

function epochPath(table: string, epoch: number): string {
  return `${lockDir(table)}${String(epoch).padStart(20, '0')}.json`;
}

/** The newest epoch of the table's lock (null: never taken), and the older epochs' paths. */
async function newest(
  storage: ArchiveStorage,
  table: string,
): Promise<{ record: LockRecord | null; epoch: number; older: string[] }> {
  const dir = lockDir(table);
  const epochs: string[] = [];
  for await (const p of storage.list(dir)) if (/^\d{20}\.json$/.test(p.slice(dir.length))) epochs.push(p);
  const last = epochs.at(-1);
  if (last === undefined) return { record: null, epoch: 0, older: [] };
  const body = await storage.get(last);
  const epoch = Number(last.slice(dir.length, dir.length + 20));
  // A lock record that cannot be read blocks nobody for ever: treated as released (its epoch still counts).
  let record: LockRecord | null = null;
  if (body) {
    try {
      record = parseArchiveJson(LockRecordSchema, body, last);
    } catch {
      record = null;
    }
  }
  return { record, epoch, older: epochs.slice(0, -1) };
}

/** Whether a lock record still keeps others out at `now`. */
export function lockIsHeld(record: LockRecord | null, now: number): boolean {
  if (!record || record.released) return false;
  if (ownerIsProvablyDead(record.owner)) return false;
  return record.expiresAtMs + SKEW_MS > now;
}

/** Take the table's lock if nobody holds it: the lock, or who holds it. */
export async function tryLock(
  storage: ArchiveStorage,
  options: LockOptions,
): Promise<{ held: HeldLock } | { holder: LockRecord | null }> {
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? LOCK_LEASE_MS;
  const owner = options.owner ?? localOwnerId();
  const { record, epoch, older } = await newest(storage, options.table);
  if (lockIsHeld(record, now())) return { holder: record };
  const started = now();
  const mine: LockRecord = {
    table: options.table,
    epoch: epoch + 1,
    owner,
    purpose: options.purpose,
    acquiredAtMs: started,
    expiresAtMs: started + leaseMs,
    released: false,
  };
  const path = epochPath(options.table, mine.epoch);
  if (!(await storage.putIfAbsent(path, encodeArchiveJson(mine))))
    return { holder: (await newest(storage, options.table)).record };
  // Epochs before the one just replaced are history nobody reads.
  for (const p of older) await storage.delete(p).catch(() => undefined);
  return { held: new Holder(storage, mine, path, { leaseMs, now }) };
}

/**
 * Take the table's lock, waiting while someone holds it (with a note that asks a compaction to hand it over);
 * `onWait` hears who holds it, once per holder. Rejects when `signal` aborts.
 */
export async function waitForLock(
  storage: ArchiveStorage,
  options: LockOptions & { signal?: AbortSignal; onWait?: (holder: LockRecord | null) => void },
): Promise<HeldLock> {
  const owner = options.owner ?? localOwnerId();
  const note = `${lockDir(options.table)}wait/${safeSegment(owner)}.json`;
  let told: string | null = null;
  let noted = false;
  try {
    for (;;) {
      const got = await tryLock(storage, { ...options, owner });
      if ('held' in got) return got.held;
      if (got.holder?.owner !== told) {
        told = got.holder?.owner ?? null;
        options.onWait?.(got.holder);
      }
      if (!noted) {
        const now = (options.now ?? Date.now)();
        await storage.put(note, encodeArchiveJson({ owner, purpose: options.purpose, atMs: now }));
        noted = true;
      }
      if (options.signal?.aborted)
        throw new ConflictError(
          `the archive lock of ${options.table} is held by ${told ?? 'another process'}`,
        );
      await sleep(WAIT_POLL_MS, undefined, { signal: options.signal }).catch(() => undefined);
    }
  } finally {
    if (noted) await storage.delete(note).catch(() => undefined);
  }
}

class Holder implements HeldLock {
  private readonly abort = new AbortController();
  private validUntil: number;
  private lost = false;
  private readonly timer: NodeJS.Timeout;
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly storage: ArchiveStorage,
    private record: LockRecord,
    private readonly path: string,
    private readonly opts: { leaseMs: number; now: () => number },
  ) {
    this.validUntil = record.acquiredAtMs + opts.leaseMs - SKEW_MS;
    this.timer = setInterval(
      () => {
        this.renewing ??= this.renew().finally(() => (this.renewing = null));
      },
      Math.floor(opts.leaseMs / 3),
    );
    this.timer.unref();
  }

  get table(): string {
    return this.record.table;
  }

  get owner(): string {
    return this.record.owner;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  assertValid(): void {
    if (this.lost || this.opts.now() > this.validUntil) {
      this.markLost();
      throw new LeaseLostError(`the archive lock of ${this.table} was lost (not renewed in time)`);
    }
  }

  /** A renewal counts only when it came back before the lock it renews ran out: else the lock is lost. */
  private async renew(): Promise<void> {
    const started = this.opts.now();
    if (this.lost || started > this.validUntil) return this.markLost();
    const next = { ...this.record, expiresAtMs: started + this.opts.leaseMs };
    try {
      await this.storage.put(this.path, encodeArchiveJson(next));
    } catch {
      return; // tried again at the next tick, while the lock lasts
    }
    if (this.opts.now() > this.validUntil) return this.markLost();
    this.record = next;
    this.validUntil = started + this.opts.leaseMs - SKEW_MS;
  }

  private markLost(): void {
    this.lost = true;
    this.abort.abort(new LeaseLostError(`the archive lock of ${this.table} was lost`));
  }

  async waited(): Promise<boolean> {
    const dir = `${lockDir(this.table)}wait/`;
    const now = this.opts.now();
    for await (const p of this.storage.list(dir)) {
      const body = await this.storage.get(p);
      if (!body) continue;
      try {
        const note = parseArchiveJson(WaitNoteSchema, body, p);
        // A note left by a waiter that died long ago asks for nothing.
        if (note.owner !== this.owner && now - note.atMs < 4 * this.opts.leaseMs) return true;
      } catch {
        continue;
      }
    }
    return false;
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    await this.renewing;
    if (this.lost || this.opts.now() > this.validUntil) return;
    this.lost = true;
    await this.storage.put(
      this.path,
      encodeArchiveJson({ ...this.record, released: true, expiresAtMs: this.opts.now() }),
    );
  }
}
