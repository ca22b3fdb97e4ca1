/**
 * Bounded concurrency, one home for it: `forEachLimited` for a list of work, `Semaphore` for work that arrives from
 * many callers (the conditional DeleteItems of every shard worker of a process).
 */

/** Bounds how many of the functions given to `run` run at once, across every caller; the rest wait in order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/**
 * `fn` for every item, at most `limit` at once, in the items' order; rejects with the first failure (the items
 * already started finish on their own). Memory is O(limit), whatever the number of items.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  const queue = items.values();
  const worker = async (): Promise<void> => {
    // One iterator shared by every worker: each item is taken by exactly one of them.
    for (const item of queue) await fn(item);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}
