import { Semaphore, forEachLimited } from '../../../core/concurrency';

/** A task that records how many tasks run at once while it runs. */
function tracker() {
  let running = 0;
  let most = 0;
  const task = async (): Promise<void> => {
    running++;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 2));
    running--;
  };
  return { task, most: () => most };
}

describe('bounded concurrency', () => {
  it('forEachLimited runs every item once, in order, at most `limit` at once', async () => {
    const { task, most } = tracker();
    const started: number[] = [];
    const items = Array.from({ length: 25 }, (_, i) => i);
    await forEachLimited(items, 4, async (i) => {
      started.push(i);
      await task();
    });
    expect(started).toEqual(items);
    expect(most()).toBe(4);
    await forEachLimited([], 4, () => Promise.reject(new Error('never called')));
  });

  it('forEachLimited rejects with the first failure', async () => {
    await expect(
      forEachLimited([1, 2, 3], 2, (i) =>
        i === 2 ? Promise.reject(new Error('item 2')) : Promise.resolve(),
      ),
    ).rejects.toThrow('item 2');
  });

  it('a Semaphore bounds the work of many callers', async () => {
    const { task, most } = tracker();
    const gate = new Semaphore(3);
    await Promise.all(Array.from({ length: 12 }, () => gate.run(task)));
    expect(most()).toBe(3);
  });
});
