import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `fn` every `everyMs` until it returns a value other than `false` or `undefined` and returns that value
 * (a check that answers `true` returns `true`). A throw counts as "not yet": the last one is named in the error
 * if `timeoutMs` passes first. `fn` may be synchronous (a flag set by a stand-in) or asynchronous (a query).
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    await sleep(everyMs);
  }
}
