import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  startLeaseGroup,
  type LeaseGroup,
  type LeaseGroupOptions,
  type LeaseHandle,
} from '../../../core/leases';
import { silentLogger } from '../../../core/logger';
import { waitFor } from '../../support/wait-for';

type Item = Record<string, AttributeValue>;

const LEASE_MS = 300; // ticks every 100 ms of real time; expiry follows the fake clock below
const ME = 'me';
const TABLE = 'control';

/**
 * An in-memory control table that understands exactly the requests core/leases.ts sends (the conditions are
 * evaluated by hand), plus the two faults these tests need: DynamoDB unreachable, and a slow lease release.
 */
class FakeControlTable {
  readonly rows = new Map<string, Item>();
  down = false;
  /** While set, DeleteItem of a lease row waits for it (a release stuck in flight). */
  deleteGate: Promise<void> | undefined;
  readonly client = { send: (cmd: unknown) => this.send(cmd) } as unknown as DynamoDBClient;

  private fail(): never {
    // Not classified as transient, so withRetry gives up at once and the test does not wait for back-off.
    throw Object.assign(new Error('DynamoDB is down (test)'), { name: 'DownForTest' });
  }

  private ccf(): never {
    throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
  }

  private async send(cmd: unknown): Promise<unknown> {
    await Promise.resolve();
    if (this.down) this.fail();
    if (cmd instanceof PutItemCommand) {
      const item = cmd.input.Item as Item;
      const pk = item.pk?.S as string;
      if (cmd.input.ConditionExpression) {
        const values = cmd.input.ExpressionAttributeValues as Item;
        const row = this.rows.get(pk);
        const free =
          !row ||
          Number(row.expiresAt?.N) < Number(values[':now']?.N) ||
          row.owner?.S === values[':me']?.S ||
          (values[':dead'] !== undefined && row.owner?.S === values[':dead'].S);
        if (!free) this.ccf();
      }
      this.rows.set(pk, item);
      return {};
    }
    if (cmd instanceof UpdateItemCommand) {
      const pk = cmd.input.Key?.pk?.S as string;
      const values = cmd.input.ExpressionAttributeValues as Item;
      const row = this.rows.get(pk);
      if (!row || row.owner?.S !== values[':me']?.S) this.ccf();
      this.rows.set(pk, { ...row, expiresAt: values[':exp'] as AttributeValue });
      return {};
    }
    if (cmd instanceof DeleteItemCommand) {
      const pk = cmd.input.Key?.pk?.S as string;
      if (pk.startsWith('lease#') && this.deleteGate) await this.deleteGate;
      if (cmd.input.ConditionExpression) {
        const row = this.rows.get(pk);
        if (!row || row.owner?.S !== (cmd.input.ExpressionAttributeValues as Item)[':me']?.S) this.ccf();
      }
      this.rows.delete(pk);
      return {};
    }
    if (cmd instanceof ScanCommand) {
      return { Items: [...this.rows.values()] };
    }
    throw new Error(`unexpected command ${String(cmd)}`);
  }

  owner(name: string): string | undefined {
    return this.rows.get(`lease#test#${name}`)?.owner?.S;
  }
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Work that counts how many workers run per name at once, and lets a test hold any of them. */
function workers() {
  const active = new Map<string, number>();
  let maxActive = 0;
  const started: Array<{ name: string; signal: AbortSignal }> = [];
  /** Per invocation index: if set, that worker ignores its signal and runs until the promise settles. */
  const stuck = new Map<number, Promise<void>>();
  const work = async (lease: LeaseHandle): Promise<void> => {
    const index = started.length;
    started.push({ name: lease.name, signal: lease.signal });
    const n = (active.get(lease.name) ?? 0) + 1;
    active.set(lease.name, n);
    maxActive = Math.max(maxActive, n);
    try {
      const hold = stuck.get(index);
      if (hold) await hold;
      else if (!lease.signal.aborted)
        await new Promise<void>((resolve) => lease.signal.addEventListener('abort', () => resolve()));
    } finally {
      active.set(lease.name, (active.get(lease.name) ?? 1) - 1);
    }
  };
  return { work, started, stuck, active, maxActive: () => maxActive };
}

describe('lease group: one worker per name per process', () => {
  let clock: number;
  let store: FakeControlTable;
  const groups: LeaseGroup[] = [];

  beforeEach(() => {
    clock = 1_000_000;
    store = new FakeControlTable();
  });
  afterEach(async () => {
    store.down = false;
    store.deleteGate = undefined;
    for (const g of groups.splice(0)) await g.stop();
  });

  function start(
    names: () => readonly string[],
    work: (l: LeaseHandle) => Promise<void>,
    extra: Partial<LeaseGroupOptions> = {},
  ): LeaseGroup {
    const g = startLeaseGroup({
      ddb: store.client,
      table: TABLE,
      kind: 'test',
      ownerId: ME,
      leaseMs: LEASE_MS,
      logger: silentLogger,
      names,
      work,
      now: () => clock,
      ...extra,
    });
    groups.push(g);
    return g;
  }

  it('does not re-acquire a lease lost while DynamoDB was down until its old work has finished', async () => {
    const w = workers();
    const batch = gate();
    w.stuck.set(0, batch.promise); // the first worker is a batch stuck retrying: it ignores the abort
    const g = start(() => ['u#0'], w.work);
    await waitFor('the first worker', () => w.started.length === 1, 5_000, 10);

    // DynamoDB goes away for longer than the lease: renewals fail, the lease is lost, the work is told to stop.
    store.down = true;
    clock += 10 * LEASE_MS;
    await waitFor('the lost lease to abort its work', () => w.started[0]?.signal.aborted === true, 5_000, 10);
    expect(g.held()).toEqual([]);

    // DynamoDB is back. The row is expired (and ours anyway), so it is free; the old batch still runs.
    store.down = false;
    for (let i = 0; i < 4; i++) await g.tick();
    expect(w.started).toHaveLength(1);
    expect(w.active.get('u#0')).toBe(1);

    // Once the old work ends, the lease is taken again and a single new worker runs.
    batch.open();
    await waitFor('the second worker', () => w.started.length === 2, 5_000, 10);
    await g.tick();
    expect(w.maxActive()).toBe(1);
    expect(w.started[1]?.signal.aborted).toBe(false);
    expect(g.held()).toEqual(['u#0']);
    expect(store.owner('u#0')).toBe(ME);
  });

  it('does not re-acquire a handed-over lease while its release is still in flight', async () => {
    const w = workers();
    let names: string[] = ['u#0'];
    const g = start(() => names, w.work);
    await waitFor('the first worker', () => w.started.length === 1, 5_000, 10);

    // The unit is no longer wanted: the work ends, then the release (DeleteItem) hangs for a while.
    const release = gate();
    store.deleteGate = release.promise;
    names = [];
    await waitFor('the first worker to end', () => w.active.get('u#0') === 0, 5_000, 10);

    // Wanted again while the release is in flight: the row is still ours, but taking it now would let the late
    // release delete the new row under a running worker.
    names = ['u#0'];
    for (let i = 0; i < 4; i++) await g.tick();
    expect(w.started).toHaveLength(1);

    release.open();
    await waitFor('the second worker', () => w.started.length === 2, 5_000, 10);
    for (let i = 0; i < 2; i++) await g.tick();
    expect(store.owner('u#0')).toBe(ME);
    expect(g.held()).toEqual(['u#0']);
    expect(w.maxActive()).toBe(1);
  });

  it('stop waits for the work of a lost lease that is still finishing', async () => {
    const w = workers();
    const batch = gate();
    w.stuck.set(0, batch.promise);
    const g = start(() => ['u#0'], w.work);
    await waitFor('the first worker', () => w.started.length === 1, 5_000, 10);
    store.down = true;
    clock += 10 * LEASE_MS;
    await waitFor('the lost lease to abort its work', () => w.started[0]?.signal.aborted === true, 5_000, 10);
    store.down = false;
    for (let i = 0; i < 2; i++) await g.tick(); // time enough to (wrongly) start a second worker

    let stopped = false;
    const stopping = g.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, LEASE_MS / 3));
    expect(stopped).toBe(false);
    batch.open();
    await stopping;
    expect(w.started).toHaveLength(1);
    expect(w.active.get('u#0')).toBe(0);
  });

  it('stop is bounded when a work ignores its aborted signal', async () => {
    const w = workers();
    w.stuck.set(0, new Promise<void>(() => undefined)); // never ends
    const g = start(() => ['u#0'], w.work);
    await waitFor('the first worker', () => w.started.length === 1, 5_000, 10);
    const t0 = Date.now();
    await g.stop();
    const took = Date.now() - t0;
    expect(w.started[0]?.signal.aborted).toBe(true);
    expect(took).toBeGreaterThanOrEqual(LEASE_MS - 20);
    expect(took).toBeLessThan(LEASE_MS + 2_000);
    expect(store.rows.has('member#test#me')).toBe(false);
  });
  it('takes the unexpired rows of an owner proven dead at once, with the condition naming that owner', async () => {
    const far = String(clock + 60 * LEASE_MS);
    const put = (name: string, owner: string) =>
      store.rows.set(`lease#test#${name}`, {
        pk: { S: `lease#test#${name}` },
        owner: { S: owner },
        expiresAt: { N: far },
      });
    put('u#0', 'gone');
    put('u#1', 'gone');
    put('u#2', 'alive');
    const w = workers();
    const g = start(() => ['u#0', 'u#1', 'u#2'], w.work, { isDeadOwner: (owner) => owner === 'gone' });
    await g.tick();
    expect(g.held().sort()).toEqual(['u#0', 'u#1']);
    expect(store.owner('u#0')).toBe(ME);
    expect(store.owner('u#2')).toBe('alive');
  });
});
