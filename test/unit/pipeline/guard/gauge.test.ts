import { silentLogger } from '../../../../core/logger';
import { metrics } from '../../../../core/metrics';
import { GuardGauge, type GuardRecord, type GuardRows } from '../../../../pipeline/guard';
import type { GuardState } from '../../../../pipeline/guard/decision';
import { waitFor } from '../../../support/wait-for';

/** Guard rows as a control table would hold them; `reads` counts the batched reads and the tables each asked for. */
class Rows implements GuardRows {
  states = new Map<string, GuardState>();
  reads: string[][] = [];
  fail = false;
  async getMany(tables: readonly string[]): Promise<Map<string, GuardRecord>> {
    this.reads.push([...tables]);
    if (this.fail) throw new Error('control table unreachable');
    return new Map(
      tables.map((table) => [table, { table, state: this.states.get(table) ?? 'ARMED', cancelled: false }]),
    );
  }
}

async function pausedByTable(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.guardPaused.get()).values) out[String(v.labels.table)] = v.value;
  return out;
}

describe('GuardGauge: ttlstream_guard_paused from the stored guard state', () => {
  beforeEach(() => metrics.guardPaused.reset());

  it('reports 1 for a PAUSED table and 0 for the rest, and 0 again once the stored state says so, whoever changed it', async () => {
    const rows = new Rows();
    let enabled = ['orders', 'carts', 'users'];
    const g = new GuardGauge(rows, () => Promise.resolve(enabled));
    rows.states.set('orders', 'PAUSED');
    rows.states.set('carts', 'CONFIRMED');
    await g.refresh();
    expect(await pausedByTable()).toEqual({ orders: 1, carts: 0, users: 0 });
    // One read of every enabled table per refresh: the cost follows the tables, not their items.
    expect(rows.reads).toEqual([['orders', 'carts', 'users']]);

    // Confirmed by another process (its API replica, the CLI): this process never saw the confirm, only the row.
    rows.states.set('orders', 'CONFIRMED');
    await g.refresh();
    expect(await pausedByTable()).toEqual({ orders: 0, carts: 0, users: 0 });

    // A table no longer enabled loses its series rather than keep its last value.
    rows.states.set('users', 'PAUSED');
    await g.refresh();
    expect((await pausedByTable()).users).toBe(1);
    enabled = ['orders', 'carts'];
    await g.refresh();
    expect(await pausedByTable()).toEqual({ orders: 0, carts: 0 });
  });

  it('keeps the last values when the control table cannot be read, and follows it again afterwards', async () => {
    const rows = new Rows();
    const g = new GuardGauge(rows, () => Promise.resolve(['orders']));
    rows.states.set('orders', 'PAUSED');
    await g.refresh();
    rows.fail = true;
    rows.states.set('orders', 'ARMED');
    await expect(g.refresh()).rejects.toThrow('control table unreachable');
    expect(await pausedByTable()).toEqual({ orders: 1 });
    rows.fail = false;
    await g.refresh();
    expect(await pausedByTable()).toEqual({ orders: 0 });
  });

  it('refreshes at once and then every interval until stopped, through failures', async () => {
    const rows = new Rows();
    const g = new GuardGauge(rows, () => Promise.resolve(['orders']));
    rows.states.set('orders', 'PAUSED');
    const running = g.start(20, silentLogger);
    try {
      await waitFor('first refresh', async () => (await pausedByTable()).orders === 1, 2000, 5);
      rows.fail = true;
      const failedFrom = rows.reads.length;
      await waitFor('refreshes go on while failing', () =>
        Promise.resolve(rows.reads.length >= failedFrom + 2),
      );
      rows.fail = false;
      rows.states.set('orders', 'CONFIRMED');
      await waitFor('the confirm seen', async () => (await pausedByTable()).orders === 0, 2000, 5);
    } finally {
      await running.stop();
    }
    const reads = rows.reads.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(rows.reads.length).toBe(reads);
  });
});
