import { LagBoard } from '../../../streams/lag';

describe('LagBoard: how far behind its stream each table is', () => {
  it("a table's lag is its worst shard's oldest unread record; caught up is 0; a failed read counts from the last empty one", () => {
    const b = new LagBoard();
    b.behind('a', 'orders', 1_000);
    b.behind('a', 'orders', 5_000); // a later page of the same shard keeps the older record
    b.behind('b', 'orders', 7_000);
    b.caughtUp('c', 'carts');
    expect(Object.fromEntries(b.lagSeconds(11_000))).toEqual({ orders: 10, carts: 0 });
    b.caughtUp('a', 'orders');
    expect(b.lagSeconds(11_000).get('orders')).toBe(4);
    b.unsure('c', 'carts', 9_000);
    expect(b.lagSeconds(11_000).get('carts')).toBe(2);
    b.drop('b');
    b.drop('c');
    expect(Object.fromEntries(b.lagSeconds(11_000))).toEqual({ orders: 0 });
  });
});
