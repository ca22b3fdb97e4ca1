import type { ConsumerConfig, Kafka } from 'kafkajs';
import type { AdminClient } from '../../../../archiver/group/admin';
import { GroupConsumer } from '../../../../archiver/group/consumer';
import { LeavingClients } from '../../../../archiver/group/leaving';
import type { Recovery } from '../../../../archiver/group/recovery';
import type { BatchRunner } from '../../../../archiver/group/runner';
import { PartitionSlots } from '../../../../archiver/group/slots';
import { newGroupState } from '../../../../archiver/group/state';
import { archiverOptionsFrom } from '../../../../archiver/options';
import { parseConfig } from '../../../../core/config';
import { silentLogger } from '../../../../core/logger';
import { waitFor } from '../../../support/wait-for';

/**
 * The consumer's lifecycle around kafkajs (archiver/group/consumer.ts): which consumer runs, which is replaced and
 * which may restart itself. kafkajs is replaced by a stand-in whose `run` resolves only when the test says the
 * group was joined, and whose events the test emits: what a silent connection does to a real consumer (a request
 * that times out, a join that never answers) is in test/integration/faults/network-archiver.test.ts; this pins
 * down the decisions taken on those events, which a random draw of silent connections reaches only now and then.
 */

type Listener = (event: { payload: unknown }) => void;

class StandInConsumer {
  readonly events = {
    GROUP_JOIN: 'consumer.group_join',
    REBALANCING: 'consumer.rebalancing',
    CRASH: 'consumer.crash',
    FETCH_START: 'consumer.fetch_start',
    REQUEST_TIMEOUT: 'consumer.network.request_timeout',
  } as const;
  private readonly listeners = new Map<string, Listener[]>();
  /** Called by run(): the group is joined when the test calls it. */
  private joined: (() => void) | null = null;
  running = false;
  disconnected = false;

  constructor(readonly options: ConsumerConfig) {}

  on(event: string, listener: Listener): void {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
  }

  emit(event: string, payload: unknown): void {
    for (const l of this.listeners.get(event) ?? []) l({ payload });
  }

  connect = (): Promise<void> => Promise.resolve();
  subscribe = (): Promise<void> => Promise.resolve();
  pause = (): void => undefined;

  run = (): Promise<void> => {
    this.running = true;
    return new Promise((resolve) => (this.joined = resolve));
  };

  /** The group joined: run() resolves at the first join, and kafkajs tells every join (a rejoin too). */
  join(): void {
    if (!this.joined) throw new Error('run() was not called');
    this.joined();
    this.emit(this.events.GROUP_JOIN, { memberAssignment: {} });
  }

  disconnect = (): Promise<void> => {
    this.disconnected = true;
    return Promise.resolve();
  };

  /** What kafkajs asks after a retriable crash: may this consumer restart itself? */
  mayRestart(): Promise<boolean> {
    const restartOnFailure = this.options.retry?.restartOnFailure;
    if (!restartOnFailure) throw new Error('no restartOnFailure given to kafkajs');
    return restartOnFailure(new Error('crash'));
  }
}

function setup() {
  const config = parseConfig({});
  const consumers: StandInConsumer[] = [];
  const kafka = {
    consumer: (options: ConsumerConfig) => {
      const c = new StandInConsumer(options);
      consumers.push(c);
      return c;
    },
  } as unknown as Kafka;
  const admin = {
    with: <T>(fn: (a: { listTopics(): Promise<string[]> }) => Promise<T>) =>
      fn({ listTopics: () => Promise.resolve([config.topics.shared]) }),
  } as unknown as AdminClient;
  const state = newGroupState();
  const group = new GroupConsumer({
    kafka,
    log: silentLogger,
    opts: archiverOptionsFrom(config, { rebalanceTimeoutMs: 7000 }),
    state,
    admin,
    slots: new PartitionSlots(silentLogger, {} as Recovery),
    runner: {} as BatchRunner,
    leaving: new LeavingClients(),
  });
  const stop = async () => {
    state.stopped = true;
    await group.stop();
  };
  /** The group's running consumer is this stand-in. */
  const runs = (c: StandInConsumer | undefined) => (state.consumer as unknown) === c;
  return { group, consumers, state, runs, stop };
}

/** A few turns of the event loop: what a restart under way needs to settle. */
async function turns(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise(setImmediate);
}

const timeout = (apiName: string) => ({ apiName, broker: '127.0.0.1:9092' });

describe('archiver group consumer lifecycle', () => {
  it('a request timeout while a replacement joins the group fails its start: the next is tried on new connections', async () => {
    const { group, consumers, state, runs, stop } = setup();
    const refreshing = group.refreshTopics();
    await waitFor('the first consumer runs', () => consumers[0]?.running === true, 3_000, 5);
    consumers[0]!.join();
    await refreshing;
    expect(state.consumer).toBe(consumers[0]);

    // A fetch on a silent connection: replaced.
    consumers[0]!.emit(consumers[0]!.events.REQUEST_TIMEOUT, timeout('Fetch'));
    await waitFor('a replacement runs', () => consumers[1]?.running === true, 3_000, 5);
    expect(consumers[0]!.disconnected).toBe(true);

    // The replacement's JoinGroup went down a silent connection too: kafkajs would wait on it (and retry on it);
    // the restart under way must drop it and try another.
    consumers[1]!.emit(consumers[1]!.events.REQUEST_TIMEOUT, timeout('JoinGroup'));
    await waitFor('a second replacement runs', () => consumers[2]?.running === true, 3_000, 5);
    expect(consumers[1]!.disconnected).toBe(true);
    consumers[2]!.join();
    await waitFor('the second replacement is the running consumer', () => runs(consumers[2]), 3_000, 5);

    // The dropped ones may not restart themselves after their crash; the running one may, until the stop.
    expect(await consumers[0]!.mayRestart()).toBe(false);
    expect(await consumers[1]!.mayRestart()).toBe(false);
    expect(await consumers[2]!.mayRestart()).toBe(true);
    expect(consumers[2]!.options.retry?.retries).toBe(5);
    expect(consumers[2]!.options.rebalanceTimeout).toBe(7000);
    await stop();
    expect(await consumers[2]!.mayRestart()).toBe(false);
    expect(consumers).toHaveLength(3);
  });

  it('a request timeout while the first consumer joins: the next starts at once, not at the next topic refresh', async () => {
    const { group, consumers, runs, stop } = setup();
    const refreshing = group.refreshTopics();
    await waitFor('the first consumer runs', () => consumers[0]?.running === true, 3_000, 5);
    consumers[0]!.emit(consumers[0]!.events.REQUEST_TIMEOUT, timeout('JoinGroup'));
    await refreshing;
    expect(consumers[0]!.disconnected).toBe(true);
    // The default topic refresh is 30 s away.
    await waitFor('a replacement runs', () => consumers[1]?.running === true, 3_000, 5);
    consumers[1]!.join();
    await waitFor('the replacement is the running consumer', () => runs(consumers[1]), 3_000, 5);
    await stop();
  });

  it('a fetch after a rejoin failed (kafkajs back on its old assignment) replaces the consumer; after a join it does not', async () => {
    const { group, consumers, runs, stop } = setup();
    const refreshing = group.refreshTopics();
    await waitFor('the first consumer runs', () => consumers[0]?.running === true, 3_000, 5);
    consumers[0]!.join();
    await refreshing;
    // Fetching as usual: nothing to do.
    consumers[0]!.emit(consumers[0]!.events.FETCH_START, { nodeId: 1 });
    // A rebalance began, the rejoin failed with a retriable error, and kafkajs fetches its old assignment again.
    consumers[0]!.emit(consumers[0]!.events.REBALANCING, {});
    consumers[0]!.emit(consumers[0]!.events.FETCH_START, { nodeId: 1 });
    await waitFor('a replacement runs', () => consumers[1]?.running === true, 3_000, 5);
    expect(consumers[0]!.disconnected).toBe(true);
    consumers[1]!.join();
    await waitFor('the replacement is the running consumer', () => runs(consumers[1]), 3_000, 5);

    await turns();
    // A rebalance whose rejoin ends in a new assignment: the fetches after it are the new assignment's.
    consumers[1]!.emit(consumers[1]!.events.REBALANCING, {});
    consumers[1]!.join();
    consumers[1]!.emit(consumers[1]!.events.FETCH_START, { nodeId: 1 });
    // A replacement would drop the running consumer within a few turns of the event loop.
    await turns();
    expect(consumers[1]!.disconnected).toBe(false);
    expect(runs(consumers[1])).toBe(true);
    await stop();
    expect(consumers).toHaveLength(2);
  });

  it('a crash kafkajs does not restart from replaces the consumer', async () => {
    const { group, consumers, runs, stop } = setup();
    const refreshing = group.refreshTopics();
    await waitFor('the first consumer runs', () => consumers[0]?.running === true, 3_000, 5);
    consumers[0]!.join();
    await refreshing;
    consumers[0]!.emit(consumers[0]!.events.CRASH, {
      error: new Error('Broker not connected'),
      restart: false,
    });
    await waitFor('a replacement runs', () => consumers[1]?.running === true, 3_000, 5);
    consumers[1]!.join();
    await waitFor('the replacement is the running consumer', () => runs(consumers[1]), 3_000, 5);
    expect(consumers[0]!.disconnected).toBe(true);
    await stop();
  });
});
