import { setTimeout as sleep } from 'node:timers/promises';

/** `p`, or undefined after `ms` (the timer never holds the process open). */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  const abort = new AbortController();
  try {
    return await Promise.race([p, sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined)]);
  } finally {
    abort.abort();
  }
}

/**
 * Dropped consumers, admin clients and producers still disconnecting: their silent connections may
 * take a while, so nobody waits for them but the final stop, and that only for a bounded time.
 */
export class LeavingClients {
  private readonly leaving = new Set<Promise<void>>();

  /** Let a dropped client disconnect in the background. */
  add(disconnecting: Promise<void>): void {
    const p = disconnecting.catch(() => undefined);
    this.leaving.add(p);
    void p.then(() => this.leaving.delete(p));
  }

  async settle(ms: number): Promise<void> {
    await within(Promise.all(this.leaving), ms);
  }
}
