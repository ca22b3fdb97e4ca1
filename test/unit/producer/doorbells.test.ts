import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Doorbells } from '../../../producer/doorbells';

type Item = Record<string, AttributeValue>;

/** A marks table holding only doorbells: shard → token. Counts the requests and the bells each one read. */
function bellTable(tokens: Map<number, string>): {
  ddb: DynamoDBClient;
  reads: number[][];
  fail: { next?: Error };
} {
  const reads: number[][] = [];
  const fail: { next?: Error } = {};
  const ddb = {
    send: async (cmd: { input: { RequestItems: Record<string, { Keys: Item[] }> } }) => {
      if (fail.next) {
        const err = fail.next;
        fail.next = undefined;
        throw err;
      }
      const [table, request] = Object.entries(cmd.input.RequestItems)[0] as [string, { Keys: Item[] }];
      const shards = request.Keys.map((k) => Number(k.pk?.S?.slice('bell#'.length)));
      reads.push(shards);
      const items = shards.flatMap((s) =>
        tokens.has(s)
          ? [{ pk: { S: `bell#${s}` }, sk: { S: '-' }, token: { S: tokens.get(s) as string } }]
          : [],
      );
      return { Responses: { [table]: items } };
    },
  } as unknown as DynamoDBClient;
  return { ddb, reads, fail };
}

/** Lets `ms` of (fake) time pass, running the timers and the promises they start. */
const pass = (ms: number): Promise<void> => jest.advanceTimersByTimeAsync(ms).then(() => undefined);

describe('producer doorbells', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("reads every waiting shard's bell in one request and wakes the shard whose bell rang", async () => {
    const tokens = new Map([
      [1, 'a'],
      [2, 'b'],
    ]);
    const { ddb, reads } = bellTable(tokens);
    const bells = new Doorbells(ddb, 'marks', 10);
    const signal = new AbortController().signal;
    const deadline = Date.now() + 60_000;
    const one = bells.wait({ shard: 1, token: 'a', checkFirst: false, deadline, signal });
    const two = bells.wait({ shard: 2, token: 'b', checkFirst: false, deadline, signal });
    await pass(50);
    expect(reads.length).toBeGreaterThan(0);
    // Both bells in each request while both wait: one request per look, not one per shard.
    expect(reads.every((r) => r.length === 2)).toBe(true);
    tokens.set(2, 'b2');
    await pass(20);
    await expect(two).resolves.toBe('b2');
    const before = reads.length;
    await pass(50);
    // Shard 1 alone now.
    expect(reads.slice(before).every((r) => r.length === 1 && r[0] === 1)).toBe(true);
    tokens.set(1, 'a2');
    await pass(2000);
    await expect(one).resolves.toBe('a2');
    bells.close();
  });

  it('looks at once when asked to check first, and backs off as a lone shard would', async () => {
    const tokens = new Map([[3, 'c']]);
    const { ddb, reads } = bellTable(tokens);
    // pollMs 200: without checkFirst nothing would be read in the first 150 ms.
    const bells = new Doorbells(ddb, 'marks', 200);
    const signal = new AbortController().signal;
    tokens.set(3, 'rang during the sweep');
    const t0 = Date.now();
    const first = bells.wait({ shard: 3, token: 'c', checkFirst: true, deadline: t0 + 60_000, signal });
    await pass(1);
    await expect(first).resolves.toBe('rang during the sweep');
    expect(reads).toEqual([[3]]);

    const waiting = bells.wait({
      shard: 3,
      token: 'rang during the sweep',
      checkFirst: false,
      deadline: t0 + 60_000,
      signal,
    });
    await pass(199);
    expect(reads).toHaveLength(1); // the first look comes pollMs after the wait starts
    await pass(1);
    expect(reads).toHaveLength(2);
    // Then 2 × pollMs, 4 × (capped at a second): 400 ms, then 800, then 1000.
    await pass(399);
    expect(reads).toHaveLength(2);
    await pass(1);
    expect(reads).toHaveLength(3);
    await pass(800 + 1000);
    expect(reads).toHaveLength(5);
    await pass(1000);
    expect(reads).toHaveLength(6);
    tokens.set(3, 'next');
    await pass(1000);
    await expect(waiting).resolves.toBe('next');
    bells.close();
  });

  it('makes one look per second for idle shards that started waiting at different times', async () => {
    const tokens = new Map([
      [8, 'g'],
      [9, 'h'],
    ]);
    const { ddb, reads } = bellTable(tokens);
    const bells = new Doorbells(ddb, 'marks', 200);
    const signal = new AbortController().signal;
    const deadline = Date.now() + 600_000;
    void bells.wait({ shard: 8, token: 'g', checkFirst: false, deadline, signal });
    await pass(500);
    void bells.wait({ shard: 9, token: 'h', checkFirst: false, deadline, signal });
    await pass(10_000);
    const before = reads.length;
    await pass(10_000);
    // Both at the one-second cap: ten looks in ten seconds, each reading both bells (alone: twenty requests).
    expect(reads.length - before).toBe(10);
    expect(reads.slice(before).every((r) => r.length === 2)).toBe(true);
    bells.close();
  });

  it('gives up at the deadline with the last token read, and at an abort with none', async () => {
    const { ddb } = bellTable(new Map([[4, 'd']]));
    const bells = new Doorbells(ddb, 'marks', 10);
    const signal = new AbortController().signal;
    const timedOut = bells.wait({
      shard: 4,
      token: 'd',
      checkFirst: false,
      deadline: Date.now() + 60,
      signal,
    });
    await pass(60);
    await expect(timedOut).resolves.toBe('d');
    // A bell that never rang reads ''.
    const never = bells.wait({
      shard: 5,
      token: 'x',
      checkFirst: true,
      deadline: Date.now() + 60_000,
      signal,
    });
    await pass(1);
    await expect(never).resolves.toBe('');
    const abort = new AbortController();
    const waiting = bells.wait({
      shard: 4,
      token: 'd',
      checkFirst: false,
      deadline: Date.now() + 60_000,
      signal: abort.signal,
    });
    abort.abort();
    await expect(waiting).resolves.toBeUndefined();
    bells.close();
  });

  it('fails every waiting shard when the bells cannot be read, and reads again for later waits', async () => {
    const tokens = new Map([
      [6, 'e'],
      [7, 'f'],
    ]);
    const { ddb, fail } = bellTable(tokens);
    const bells = new Doorbells(ddb, 'marks', 10);
    const signal = new AbortController().signal;
    const deadline = Date.now() + 60_000;
    fail.next = Object.assign(new Error('access denied'), { name: 'AccessDeniedException' });
    const six = bells.wait({ shard: 6, token: 'e', checkFirst: true, deadline, signal });
    const seven = bells.wait({ shard: 7, token: 'f', checkFirst: true, deadline, signal });
    const failed = Promise.allSettled([six, seven]);
    await pass(1);
    expect((await failed).map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual([
      'AccessDeniedException: access denied',
      'AccessDeniedException: access denied',
    ]);
    tokens.set(6, 'e2');
    const again = bells.wait({ shard: 6, token: 'e', checkFirst: true, deadline, signal });
    await pass(1);
    await expect(again).resolves.toBe('e2');
    bells.close();
  });
});
