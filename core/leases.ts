import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { LeaseLostError } from './errors';
import type { Logger } from './logger';
import { localOwnerId, ownerIsProvablyDead } from './process-identity';
import { isRetryable, withRetry } from './retry';
import { INTERNAL_KEY } from './tables';

/**
 * Generic leases in the control table (see docs/decisions/0002-leases.md). One row per leased unit,
 * `pk = lease#<kind>#<name>`, `{owner, expiresAt}`; one liveness row per process and kind,
 * `pk = member#<kind>#<owner>`, so a process that holds nothing yet still counts when others compute their fair
 * share (otherwise the first process would keep everything forever).
 */

export interface LeaseRow {
  name: string;
  owner: string;
  expiresAt: number;
}

export interface LeasePlanInput {
  /** Every unit that should be leased by someone (e.g. all segments of all enabled tables). */
  names: readonly string[];
  /** Lease rows as read from the control table. */
  rows: readonly LeaseRow[];
  /** Owners with a live member row (heartbeat not expired), as read. */
  liveMembers: readonly string[];
  me: string;
  /** Units this process holds now (its renewals succeeded). */
  held: ReadonlySet<string>;
  now: number;
  /**
   * Owners known to be dead although their rows have not expired (a process on this machine that no longer
   * exists, core/process-identity.ts): their leases are free and they do not count towards the fair share.
   */
  deadOwners?: ReadonlySet<string>;
}

export interface LeasePlan {
  share: number;
  liveOwners: number;
  /** Free units to try to take, best first, at most the room left under the fair share. */
  acquire: string[];
  /** For each unit in `acquire` still leased by a dead owner: that owner, whose row the take-over must name. */
  takeOverFrom: Map<string, string>;
  /** Held units to hand over: no longer wanted, or above the fair share. */
  release: string[];
}

/** ceil(total / owners): with N owners each takes at most this many, so together they cover everything. */
export function fairShare(total: number, liveOwners: number): number {
  if (total <= 0) return 0;
  return Math.ceil(total / Math.max(1, liveOwners));
}

/** FNV-1a, so each owner walks the free units in its own order and peers rarely race for the same row. */
function spread(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The pure part of a lease tick: what to take and what to give back. */
export function planLeases(input: LeasePlanInput): LeasePlan {
  const wanted = new Set(input.names);
  const dead = input.deadOwners ?? new Set<string>();
  const owners = new Set<string>(input.liveMembers.filter((o) => !dead.has(o)));
  owners.add(input.me);
  const byName = new Map<string, LeaseRow>();
  for (const row of input.rows) {
    if (!wanted.has(row.name)) continue;
    byName.set(row.name, row);
    if (row.expiresAt > input.now && !dead.has(row.owner)) owners.add(row.owner);
  }
  const share = fairShare(wanted.size, owners.size);
  const release = [...input.held].filter((n) => !wanted.has(n)).sort();
  const keep = [...input.held].filter((n) => wanted.has(n)).sort();
  if (keep.length > share) release.push(...keep.slice(share));
  const room = Math.max(0, share - Math.min(keep.length, share));
  const free = input.names.filter((n) => {
    if (input.held.has(n)) return false;
    const row = byName.get(n);
    // A row of mine that I do not hold (a previous incarnation with the same owner id) is free for me.
    return !row || row.expiresAt <= input.now || row.owner === input.me || dead.has(row.owner);
  });
  free.sort((a, b) => spread(input.me + a) - spread(input.me + b) || (a < b ? -1 : 1));
  const acquire = free.slice(0, room);
  const takeOverFrom = new Map<string, string>();
  for (const name of acquire) {
    const row = byName.get(name);
    if (row && row.expiresAt > input.now && dead.has(row.owner)) takeOverFrom.set(name, row.owner);
  }
  return { share, liveOwners: owners.size, acquire, takeOverFrom, release };
}

export type LeaseEndReason = 'lost' | 'rebalance' | 'unwanted' | 'stop';

/** What a unit of work sees of its lease. */
export interface LeaseHandle {
  readonly kind: string;
  readonly name: string;
  /** Aborted when the work must end: the lease was lost, is being handed over, or the process stops. */
  readonly signal: AbortSignal;
  /** Throw LeaseLostError unless the lease is still surely ours; call before each state change it guards. */
  assertValid(): void;
}

export interface LeaseGroupOptions {
  ddb: DynamoDBClient;
  /** The control table. */
  table: string;
  kind: string;
  ownerId: string;
  leaseMs: number;
  logger: Logger;
  /** The units to lease; called every tick, so newly enabled tables are picked up. */
  names: () => readonly string[] | Promise<readonly string[]>;
  /** Runs while the lease is held; must return soon after `lease.signal` aborts. */
  work: (lease: LeaseHandle) => Promise<void>;
  now?: () => number;
  /** Called after every tick with the number of units held. */
  onHeld?: (held: readonly string[]) => void;
  /** Whether an owner whose rows have not expired is known to be dead; default: ownerIsProvablyDead. */
  isDeadOwner?: (owner: string) => boolean;
}

export interface LeaseGroup {
  /** Stop taking work, end the work under every lease, release the leases. */
  stop(): Promise<void>;
  held(): string[];
  /** Resolves after the next complete tick (tests and start-up use it). */
  tick(): Promise<void>;
}

/** A fresh owner id whose death other processes on this machine can prove (core/process-identity.ts). */
export function defaultOwnerId(): string {
  return localOwnerId();
}

export function leaseKey(kind: string, name: string): string {
  return `lease#${kind}#${name}`;
}
function memberKey(kind: string, owner: string): string {
  return `member#${kind}#${owner}`;
}

interface Held {
  name: string;
  controller: AbortController;
  validUntil: number;
  ending?: LeaseEndReason;
  done: Promise<void>;
}

const retryOpts = {
  retries: 5,
  initialDelayMs: 50,
  maxDelayMs: 1000,
  isRetryable,
};

/**
 * Keep a fair share of `names` leased and run `work` under each lease. Renews every leaseMs/3; a renewal refused
 * (someone else took the row) aborts the work at once; renewals that keep failing for 2/3 of the lease time also
 * end it, leaving 1/3 of the lease as margin for clock skew before a peer may take the unit over.
 */
export function startLeaseGroup(options: LeaseGroupOptions): LeaseGroup {
  const group = new LeaseGroupRun(options);
  group.start();
  return {
    held: () => group.held(),
    tick: () => group.tick(),
    stop: () => group.stop(),
  };
}

/** One lease group: its leases, the work under them, and the tick that renews, rebalances and acquires. */
class LeaseGroupRun {
  private readonly me: string;
  private readonly now: () => number;
  private readonly isDeadOwner: (owner: string) => boolean;
  private readonly leases = new Map<string, Held>();
  /**
   * Every lease acquired by this process whose `done` has not settled yet (its work, and the release after it), by
   * name. A lease lost while DynamoDB was unreachable keeps its work running until that work notices the abort
   * (e.g. a producer batch retrying its requests); the same name is not acquired again until then, so one process
   * never runs two workers for one name, and a late release never deletes the row of a newer acquisition.
   */
  private readonly working = new Map<string, Held>();
  private readonly log: Logger;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly tickWaiters: Array<() => void> = [];
  private readonly safeWindow: number;

  constructor(private readonly options: LeaseGroupOptions) {
    this.me = options.ownerId;
    this.now = options.now ?? Date.now;
    this.isDeadOwner = options.isDeadOwner ?? ((owner: string) => ownerIsProvablyDead(owner));
    this.log = options.logger.child({ component: 'leases', kind: options.kind, owner: this.me });
    this.safeWindow = Math.floor((options.leaseMs * 2) / 3);
  }

  start(): void {
    this.running = this.loop();
  }

  held(): string[] {
    return [...this.leases.values()].filter((h) => !h.ending).map((h) => h.name);
  }

  tick(): Promise<void> {
    return new Promise<void>((resolve) => this.tickWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    const { ddb, table, kind } = this.options;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.waitForWork();
    for (const w of this.tickWaiters.splice(0)) w();
    this.options.onHeld?.([]);
    try {
      await ddb.send(
        new DeleteItemCommand({ TableName: table, Key: { [INTERNAL_KEY]: { S: memberKey(kind, this.me) } } }),
      );
    } catch (err) {
      this.log.warn({ err }, 'could not delete member row; it expires on its own');
    }
  }

  private handleFor(h: Held): LeaseHandle {
    const { kind } = this.options;
    const { me, now } = this;
    return {
      kind,
      name: h.name,
      signal: h.controller.signal,
      assertValid() {
        if (h.ending === 'lost' || now() >= h.validUntil) {
          throw new LeaseLostError(`lease ${kind}/${h.name} is no longer held by ${me}`);
        }
      },
    };
  }

  private end(h: Held, reason: LeaseEndReason): void {
    const { kind } = this.options;
    if (h.ending) return;
    h.ending = reason;
    h.controller.abort(new LeaseLostError(`lease ${kind}/${h.name} ended: ${reason}`));
  }

  private async renew(h: Held): Promise<void> {
    const { ddb, table, kind, leaseMs } = this.options;
    const me = this.me;
    const sentAt = this.now();
    try {
      await withRetry(
        () =>
          ddb.send(
            new UpdateItemCommand({
              TableName: table,
              Key: { [INTERNAL_KEY]: { S: leaseKey(kind, h.name) } },
              UpdateExpression: 'SET expiresAt = :exp',
              ConditionExpression: '#owner = :me',
              ExpressionAttributeNames: { '#owner': 'owner' },
              ExpressionAttributeValues: { ':exp': { N: String(sentAt + leaseMs) }, ':me': { S: me } },
            }),
          ),
        retryOpts,
      );
      h.validUntil = sentAt + this.safeWindow;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        this.log.warn({ lease: h.name }, 'lease taken over by another owner; stopping its work');
        this.end(h, 'lost');
        return;
      }
      this.log.warn({ lease: h.name, err }, 'lease renewal failed; will retry');
      if (this.now() >= h.validUntil) this.end(h, 'lost');
    }
  }

  private async release(name: string): Promise<void> {
    const { ddb, table, kind } = this.options;
    const me = this.me;
    try {
      await withRetry(
        () =>
          ddb.send(
            new DeleteItemCommand({
              TableName: table,
              Key: { [INTERNAL_KEY]: { S: leaseKey(kind, name) } },
              ConditionExpression: '#owner = :me',
              ExpressionAttributeNames: { '#owner': 'owner' },
              ExpressionAttributeValues: { ':me': { S: me } },
            }),
          ),
        retryOpts,
      );
    } catch (err) {
      // Already someone else's, or unreachable: either way it expires on its own.
      if (!(err instanceof ConditionalCheckFailedException))
        this.log.warn({ lease: name, err }, 'lease release failed');
    }
  }

  /** End the work, wait for it, then give the row back (unless it was lost, when it is not ours to delete). */
  private handOver(h: Held, reason: LeaseEndReason): Promise<void> {
    this.end(h, reason);
    return h.done;
  }

  /**
   * Graceful stop: end every work still running (held leases and those already lost or being handed over) and wait
   * for it, but at most `leaseMs`. No lease is renewed once stopping, so after that long none is valid any more and
   * waiting longer protects nothing; a work that ignores its aborted signal (stuck retrying against an unreachable
   * DynamoDB) must not hang the process's shutdown.
   */
  private async waitForWork(): Promise<void> {
    const { leaseMs } = this.options;
    const all = [...this.working.values()];
    const settled = Promise.all(all.map((h) => this.handOver(h, 'stop'))).then(() => true);
    let timeout: NodeJS.Timeout | undefined;
    const bounded = new Promise<false>((resolve) => {
      timeout = setTimeout(() => resolve(false), leaseMs);
      timeout.unref();
    });
    const finished = await Promise.race([settled, bounded]);
    clearTimeout(timeout);
    if (!finished) {
      const pending = all.filter((h) => this.working.get(h.name) === h).map((h) => h.name);
      this.log.warn(
        { leases: pending, waitedMs: leaseMs },
        'work under these leases did not end in time; stopping without it',
      );
    }
  }

  /** `deadOwner`: the owner of an unexpired row, proven dead, whose row this take-over replaces. */
  private async tryAcquire(name: string, deadOwner?: string): Promise<boolean> {
    const { ddb, table, kind, leaseMs } = this.options;
    const me = this.me;
    const previous = this.working.get(name);
    if (previous) {
      // Its lease ended (lost, or handed over) but its work or its release is still running: wait for that. Its
      // signal is aborted already (every way a lease ends aborts it); make sure, so it ends promptly.
      this.end(previous, 'lost');
      this.log.info(
        { lease: name, ending: previous.ending },
        'previous work under this lease still running; not re-acquiring yet',
      );
      return false;
    }
    const sentAt = this.now();
    try {
      await withRetry(
        () =>
          ddb.send(
            new PutItemCommand({
              TableName: table,
              Item: {
                [INTERNAL_KEY]: { S: leaseKey(kind, name) },
                kind: { S: kind },
                name: { S: name },
                owner: { S: me },
                expiresAt: { N: String(sentAt + leaseMs) },
                acquiredAt: { N: String(sentAt) },
              },
              // Naming the dead owner keeps the take-over exact: if anyone else took the row meanwhile, it fails.
              ConditionExpression: deadOwner
                ? 'attribute_not_exists(#pk) OR expiresAt < :now OR #owner = :me OR #owner = :dead'
                : 'attribute_not_exists(#pk) OR expiresAt < :now OR #owner = :me',
              ExpressionAttributeNames: { '#pk': INTERNAL_KEY, '#owner': 'owner' },
              ExpressionAttributeValues: {
                ':now': { N: String(sentAt) },
                ':me': { S: me },
                ...(deadOwner ? { ':dead': { S: deadOwner } } : {}),
              },
            }),
          ),
        retryOpts,
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
    this.startWork(name, sentAt);
    if (deadOwner)
      this.log.info(
        { lease: name, from: deadOwner },
        'lease taken over from a process that no longer exists',
      );
    else this.log.info({ lease: name }, 'lease acquired');
    return true;
  }

  /** Run the work under a lease just acquired; when it ends, give the lease back (unless it was lost). */
  private startWork(name: string, sentAt: number): void {
    const { leases: held, working, log } = this;
    const h: Held = {
      name,
      controller: new AbortController(),
      validUntil: sentAt + this.safeWindow,
      done: Promise.resolve(),
    };
    held.set(name, h);
    working.set(name, h);
    h.done = (async () => {
      try {
        await this.options.work(this.handleFor(h));
      } catch (err) {
        if (!(err instanceof LeaseLostError))
          log.error({ lease: name, err }, 'work under lease failed; releasing it');
      }
      if (!h.ending) this.end(h, 'unwanted');
      if (held.get(name) === h) held.delete(name); // a re-acquired lease has a new entry: keep it
      try {
        if (h.ending !== 'lost') await this.release(name);
      } finally {
        if (working.get(name) === h) working.delete(name);
      }
    })();
  }

  private async readRows(): Promise<{ rows: LeaseRow[]; liveMembers: string[] }> {
    const { ddb, table, kind } = this.options;
    const rows: LeaseRow[] = [];
    const liveMembers: string[] = [];
    const t = this.now();
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await withRetry(
        () =>
          ddb.send(
            new ScanCommand({
              TableName: table,
              ConsistentRead: true,
              FilterExpression: 'begins_with(#pk, :lp) OR begins_with(#pk, :mp)',
              ExpressionAttributeNames: { '#pk': INTERNAL_KEY },
              ExpressionAttributeValues: { ':lp': { S: `lease#${kind}#` }, ':mp': { S: `member#${kind}#` } },
              ...(start ? { ExclusiveStartKey: start } : {}),
            }),
          ),
        retryOpts,
      );
      for (const item of page.Items ?? []) {
        const pk = item[INTERNAL_KEY]?.S ?? '';
        const owner = item.owner?.S ?? '';
        const expiresAt = Number(item.expiresAt?.N ?? '0');
        if (pk.startsWith(`member#${kind}#`)) {
          if (expiresAt > t) liveMembers.push(owner);
        } else {
          rows.push({ name: pk.slice(`lease#${kind}#`.length), owner, expiresAt });
        }
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return { rows, liveMembers };
  }

  private async heartbeat(): Promise<void> {
    const { ddb, table, kind, leaseMs } = this.options;
    await withRetry(
      () =>
        ddb.send(
          new PutItemCommand({
            TableName: table,
            Item: {
              [INTERNAL_KEY]: { S: memberKey(kind, this.me) },
              owner: { S: this.me },
              expiresAt: { N: String(this.now() + leaseMs) },
            },
          }),
        ),
      retryOpts,
    );
  }

  private async tickOnce(): Promise<void> {
    const { leases: held, me, log } = this;
    // Leases being handed over are renewed too: their work is still finishing its in-flight batch.
    await Promise.all([...held.values()].filter((h) => h.ending !== 'lost').map((h) => this.renew(h)));
    if (this.stopping) return;
    await this.heartbeat();
    const names = await this.options.names();
    const { rows, liveMembers } = await this.readRows();
    const current = new Set([...held.values()].filter((h) => !h.ending).map((h) => h.name));
    const t = this.now();
    const candidates = new Set([...liveMembers, ...rows.filter((r) => r.expiresAt > t).map((r) => r.owner)]);
    candidates.delete(me);
    const deadOwners = new Set([...candidates].filter((owner) => this.isDeadOwner(owner)));
    const plan = planLeases({ names, rows, liveMembers, me, held: current, now: t, deadOwners });
    for (const name of plan.release) {
      const h = held.get(name);
      if (!h) continue;
      log.info({ lease: name, share: plan.share, owners: plan.liveOwners }, 'handing lease over');
      // Not awaited: the work finishes its in-flight batch while this loop keeps renewing everything.
      void this.handOver(h, new Set(names).has(name) ? 'rebalance' : 'unwanted');
    }
    // Leases being handed over still count against the share until their work ends.
    let room = plan.share - [...held.values()].filter((h) => h.ending !== 'lost').length;
    for (const name of plan.acquire) {
      if (room <= 0 || this.stopping) break;
      if (await this.tryAcquire(name, plan.takeOverFrom.get(name))) room--;
    }
  }

  private async loop(): Promise<void> {
    try {
      await this.tickOnce();
    } catch (err) {
      this.log.warn({ err }, 'lease tick failed');
      for (const h of this.leases.values()) if (this.now() >= h.validUntil) this.end(h, 'lost');
    }
    this.options.onHeld?.([...this.leases.keys()]);
    for (const w of this.tickWaiters.splice(0)) w();
    if (!this.stopping)
      this.timer = setTimeout(
        () => void (this.running = this.loop()),
        Math.max(100, Math.floor(this.options.leaseMs / 3)),
      );
  }
}
