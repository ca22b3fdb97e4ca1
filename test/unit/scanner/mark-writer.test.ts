import { BatchWriteItemCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { silentLogger } from '../../../core/logger';
import { INTERNAL_KEY } from '../../../core/tables';
import type { GuardRecord } from '../../../pipeline/guard';
import { addressOf, parseMarkRow, type Mark } from '../../../pipeline/marks';
import { MarkedRecently } from '../../../scanner/marked-recently';
import { MarkWriter } from '../../../scanner/mark-writer';

const SHARDS = 4;

function marks(from: number, n: number): Mark[] {
  return Array.from({ length: n }, (_, i) => ({
    address: addressOf('t', { pk: { S: `k${from + i}` } }, SHARDS),
    markedAtMs: 0,
    expiresAtMs: 1000,
  }));
}

/** A marks table that records every BatchWriteItem: mark rows and doorbell puts. */
class FakeMarksTable {
  readonly markRows: Array<Record<string, unknown>> = [];
  readonly rings: string[][] = [];
  requests = 0;
  failNext = false;
  /** While set, every request waits for it (a slow server). */
  gate: Promise<void> | undefined;
  readonly client = {
    send: async (cmd: unknown): Promise<unknown> => {
      if (!(cmd instanceof BatchWriteItemCommand)) throw new Error('unexpected request');
      this.requests++;
      if (this.gate) await this.gate;
      if (this.failNext) {
        this.failNext = false;
        throw Object.assign(new Error('validation'), { name: 'ValidationException' });
      }
      const puts = Object.values(cmd.input.RequestItems ?? {}).flat() as WriteRequest[];
      const items = puts.map((p) => p.PutRequest?.Item ?? {});
      const bells = items.filter((i) => i[INTERNAL_KEY]?.S?.startsWith('bell#'));
      if (bells.length > 0) this.rings.push(bells.map((i) => i[INTERNAL_KEY]?.S ?? ''));
      this.markRows.push(...items.filter((i) => i[INTERNAL_KEY]?.S?.startsWith('shard#')));
      return {};
    },
  } as unknown as DynamoDBClient;

  get marksWritten(): number {
    return this.markRows.flatMap((r) => parseMarkRow(r as Parameters<typeof parseMarkRow>[0])).length;
  }
}

function setup(options: { delayMs?: number; perShardLimit?: number; bellIntervalMs?: number } = {}) {
  const table = new FakeMarksTable();
  const guardState: { cancelled: boolean; reads: number } = { cancelled: false, reads: 0 };
  const guard = {
    state: async (t: string): Promise<GuardRecord> => {
      guardState.reads++;
      return { table: t, state: 'ARMED', cancelled: guardState.cancelled } as GuardRecord;
    },
  };
  const marked = new MarkedRecently(60_000, 1000);
  const writer = new MarkWriter({
    ddb: table.client,
    marksTable: 'marks',
    guard,
    marked,
    logger: silentLogger,
    delayMs: options.delayMs ?? 1000,
    perShardLimit: options.perShardLimit ?? 1000,
    bellIntervalMs: options.bellIntervalMs ?? 1000,
  });
  return { table, guardState, marked, writer };
}

/** Let the writer's promise chains run (fake timers do not advance them). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe('MarkWriter', () => {
  beforeEach(() => jest.useFakeTimers({ now: 100_000 }));
  afterEach(() => jest.useRealTimers());

  it("gathers several pages' marks into one row per shard, written markDelayMs after the first", async () => {
    const { table, marked, writer } = setup();
    const pages = [0, 1, 2].map((p) => writer.hand('t', marks(p * 20, 20)));
    let durable = false;
    void Promise.all(pages.map((h) => h.durable)).then(() => (durable = true));
    await jest.advanceTimersByTimeAsync(999);
    expect(table.requests).toBe(0);
    expect(durable).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await settle();
    expect(durable).toBe(true);
    // One row per shard for 60 marks of three pages (per page it would be 3 × 4 rows and 3 rings).
    expect(table.markRows).toHaveLength(SHARDS);
    expect(table.marksWritten).toBe(60);
    expect(table.rings).toHaveLength(1);
    // Remembered only once durable.
    expect(marked.size('t')).toBe(60);
  });

  it('writes at once when a shard holds a batch (perShardLimit)', async () => {
    const { table, writer } = setup({ perShardLimit: 10 });
    const h = writer.hand('t', marks(0, 60));
    await settle();
    expect(table.markRows.length).toBeGreaterThan(0);
    await h.durable;
    expect(table.marksWritten).toBe(60);
  });

  it('a page waits only when its marks start a write while the previous one is in flight', async () => {
    const { table, writer } = setup({ perShardLimit: 10 });
    let open = (): void => undefined;
    table.gate = new Promise<void>((r) => (open = r));
    const first = writer.hand('t', marks(0, 60));
    let firstWaited = false;
    void first.wait.then(() => (firstWaited = true));
    await settle();
    expect(firstWaited).toBe(true); // nothing was in flight
    const second = writer.hand('t', marks(60, 60));
    let secondWaited = false;
    void second.wait.then(() => (secondWaited = true));
    await settle();
    expect(secondWaited).toBe(false); // the first write is still in flight
    table.gate = undefined;
    open();
    await second.wait;
    await second.durable;
    expect(table.marksWritten).toBe(120);
  });

  it('rings a shard at most once per bellIntervalMs, the last ring trailing', async () => {
    const { table, writer } = setup({ perShardLimit: 1 });
    await writer.hand('t', marks(0, 40)).durable;
    expect(table.rings).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(100);
    await writer.hand('t', marks(40, 40)).durable;
    await jest.advanceTimersByTimeAsync(100);
    await writer.hand('t', marks(80, 40)).durable;
    expect(table.rings).toHaveLength(1); // marks of two more writes wait for the interval
    await jest.advanceTimersByTimeAsync(799);
    expect(table.rings).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    await settle();
    expect(table.rings).toHaveLength(2);
    expect(table.rings[1]?.sort()).toEqual(['bell#0', 'bell#1', 'bell#2', 'bell#3']);
    await jest.advanceTimersByTimeAsync(5000);
    expect(table.rings).toHaveLength(2); // nothing more was written: no more rings
  });

  it('after an operator cancelled the guard (read fresh before the write): writes nothing, forgets the table', async () => {
    const { table, guardState, marked, writer } = setup({ perShardLimit: 1 });
    marked.add('t', [{ sk: 'x', expiresAtMs: 1 }], Date.now());
    guardState.cancelled = true;
    await writer.hand('t', marks(0, 10)).durable;
    expect(guardState.reads).toBe(1);
    expect(table.requests).toBe(0);
    expect(marked.size('t')).toBe(0);
  });

  it('a failed write rejects the marks handed for it; they are not remembered', async () => {
    const { table, marked, writer } = setup({ perShardLimit: 1 });
    table.failNext = true;
    await expect(writer.hand('t', marks(0, 4)).durable).rejects.toThrow('validation');
    expect(marked.size('t')).toBe(0);
  });

  it('close() writes what is pending and rings the waiting bells', async () => {
    const { table, writer } = setup({ perShardLimit: 1000 });
    const first = writer.hand('t', marks(0, 40));
    await jest.advanceTimersByTimeAsync(1000);
    await first.durable;
    writer.hand('t', marks(40, 40));
    await writer.close();
    expect(table.marksWritten).toBe(80);
    expect(table.rings).toHaveLength(2);
  });
});
