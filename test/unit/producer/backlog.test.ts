import { labelTable, metrics } from '../../../core/metrics';
import { countMarks, MarkBacklog } from '../../../producer/backlog';

const fakeMarks = (...tables: string[]) => tables.map((table) => ({ address: { table } }));

async function gauge(): Promise<Record<string, number>> {
  const { values } = await metrics.marksBacklog.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.table), v.value]));
}

describe('MarkBacklog: the marks backlog gauge from the latest sweep of each held shard', () => {
  it('sums the shards, replaces a shard at its next sweep, forgets a dropped shard, and reads 0 when emptied', async () => {
    labelTable('orders');
    labelTable('carts');
    const backlog = new MarkBacklog();
    const shard0 = new Map<string, number>();
    countMarks(shard0, fakeMarks('orders', 'orders', 'carts'));
    backlog.sweepDone(0, shard0);
    const shard1 = new Map<string, number>();
    countMarks(shard1, fakeMarks('orders'));
    backlog.sweepDone(1, shard1);
    // Tables with TTL settings have labels of their own (labelTable); tables nobody labelled are `other`.
    backlog.sweepDone(2, new Map([['not-labelled', 5]]));
    expect(backlog.totals()).toEqual(
      new Map([
        ['orders', 3],
        ['carts', 1],
        ['other', 5],
      ]),
    );
    backlog.sweepDone(0, new Map());
    backlog.drop(2);
    expect(backlog.totals()).toEqual(new Map([['orders', 1]]));
    expect(await gauge()).toMatchObject({ orders: 1, carts: 0, other: 0 });
  });
});
