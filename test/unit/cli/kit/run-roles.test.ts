import { EventEmitter } from 'node:events';
import { ValidationError } from '../../../../core/errors';
import { silentLogger } from '../../../../core/logger';
import { metrics } from '../../../../core/metrics';
import {
  ROLE_NAMES,
  RoleStartError,
  STOP_WAITS_FOR_START_MS,
  parseRoles,
  startRoles,
  type RoleName,
  type RoleStarter,
} from '../../../../cli/kit/run-roles';
import { ShutdownCoordinator } from '../../../../cli/kit/shutdown';

/** Fake roles: what is under test is the start/stop orchestration, not the roles. */
function fakeRoles(events: string[], failing?: RoleName): Record<RoleName, RoleStarter> {
  const make =
    (name: RoleName): RoleStarter =>
    async () => {
      if (name === failing) throw new Error('broker unreachable');
      events.push(`start ${name}`);
      return { stop: async () => void events.push(`stop ${name}`) };
    };
  return Object.fromEntries(ROLE_NAMES.map((n) => [n, make(n)])) as Record<RoleName, RoleStarter>;
}

function coordinator() {
  const signals = new EventEmitter();
  const lines: string[] = [];
  const c = new ShutdownCoordinator({ timeoutMs: 5_000, print: (l) => lines.push(l), signals });
  c.install();
  return { c, signals, lines };
}

describe('parseRoles', () => {
  it('accepts a comma-separated subset, de-duplicated', () => {
    expect(parseRoles('scanner, producer,scanner')).toEqual(['scanner', 'producer']);
    expect(parseRoles('api,scanner,producer,archiver')).toEqual(['api', 'scanner', 'producer', 'archiver']);
  });

  it.each(['', ',', 'scanner,deleter', 'API'])('refuses %j as a usage error', (text) => {
    expect(() => parseRoles(text)).toThrow(ValidationError);
  });
});

/** The roles of ttlstream's own deleter (the streams role aside), as the cases below run them. */
const DELETER_ROLES = ['api', 'scanner', 'producer', 'archiver'] as const;

describe('startRoles', () => {
  it('starts in pipeline order and a signal stops in the reverse (api, scanner, producer, streams, archiver)', async () => {
    const events: string[] = [];
    const { c, signals } = coordinator();
    const started = await startRoles([...ROLE_NAMES], fakeRoles(events), c, silentLogger);
    expect(started).toEqual(['archiver', 'streams', 'producer', 'scanner', 'api']);
    signals.emit('SIGTERM');
    await expect(c.done).resolves.toBe(0);
    expect(events).toEqual([
      'start archiver',
      'start streams',
      'start producer',
      'start scanner',
      'start api',
      'stop api',
      'stop scanner',
      'stop producer',
      'stop streams',
      'stop archiver',
    ]);
  });

  it('reports each role it started in ttlstream_role_up, and drops it when the role stops', async () => {
    const up = async (): Promise<string[]> =>
      (await metrics.roleUp.get()).values
        .filter((v) => v.value === 1)
        .map((v) => String(v.labels.role))
        .sort();
    metrics.roleUp.reset();
    const { c } = coordinator();
    await startRoles(['archiver', 'producer'], fakeRoles([]), c, silentLogger);
    expect(await up()).toEqual(['archiver', 'producer']);
    await c.shutdown('test');
    expect((await metrics.roleUp.get()).values).toEqual([]);
  });

  it('starts only the chosen roles', async () => {
    const events: string[] = [];
    const { c } = coordinator();
    await startRoles(['scanner', 'producer'], fakeRoles(events), c, silentLogger);
    await c.shutdown('test');
    expect(events).toEqual(['start producer', 'start scanner', 'stop scanner', 'stop producer']);
  });

  it('a role that fails to start stops the others and ends with code 1', async () => {
    const events: string[] = [];
    const { c } = coordinator();
    const failure = startRoles([...DELETER_ROLES], fakeRoles(events, 'scanner'), c, silentLogger);
    await expect(failure).rejects.toThrow(RoleStartError);
    await expect(failure).rejects.toThrow(/^scanner failed to start: broker unreachable$/);
    await expect(c.done).resolves.toBe(1);
    expect(events).toEqual([
      'start archiver',
      'start producer',
      'start api',
      'stop api',
      'stop producer',
      'stop archiver',
    ]);
  });

  it('a signal during start-up stops every role once its start settles, in pipeline order', async () => {
    const events: string[] = [];
    const { c, signals } = coordinator();
    const roles = fakeRoles(events);
    const slowProducer: RoleStarter = async () => {
      signals.emit('SIGTERM'); // arrives while the producer is starting
      events.push('start producer');
      return { stop: async () => void events.push('stop producer') };
    };
    await startRoles([...DELETER_ROLES], { ...roles, producer: slowProducer }, c, silentLogger);
    await expect(c.done).resolves.toBe(0);
    expect(events.filter((e) => e.startsWith('stop'))).toEqual([
      'stop api',
      'stop scanner',
      'stop producer',
      'stop archiver',
    ]);
  });

  it('no role waits for another to start: the pipeline runs while the archiver is still joining its group', async () => {
    const events: string[] = [];
    const { c } = coordinator();
    let joined: () => void = () => undefined;
    const joining: RoleStarter = async () => {
      await new Promise<void>((resolve) => (joined = resolve)); // a rebalance waiting out a dead member
      events.push('start archiver');
      return { stop: async () => void events.push('stop archiver') };
    };
    const starting = startRoles(
      [...DELETER_ROLES],
      { ...fakeRoles(events), archiver: joining },
      c,
      silentLogger,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(events).toEqual(['start producer', 'start scanner', 'start api']);
    joined();
    expect(await starting).toEqual(['archiver', 'producer', 'scanner', 'api']);
    await c.shutdown('test');
    expect(events.slice(3)).toEqual([
      'start archiver',
      'stop api',
      'stop scanner',
      'stop producer',
      'stop archiver',
    ]);
  });

  it('a stop waits for a role still starting at most STOP_WAITS_FOR_START_MS (a group join can outlast the shutdown budget)', async () => {
    const events: string[] = [];
    const { c } = coordinator();
    let joined: () => void = () => undefined;
    const joining: RoleStarter = async () => {
      await new Promise<void>((resolve) => (joined = resolve));
      events.push('start archiver');
      return { stop: async () => void events.push('stop archiver') };
    };
    const starting = startRoles(
      [...DELETER_ROLES],
      { ...fakeRoles(events), archiver: joining },
      c,
      silentLogger,
    );
    await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    await expect(c.shutdown('test')).resolves.toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(STOP_WAITS_FOR_START_MS - 50);
    expect(Date.now() - t0).toBeLessThan(STOP_WAITS_FOR_START_MS + 1000);
    expect(events).toEqual([
      'start producer',
      'start scanner',
      'start api',
      'stop api',
      'stop scanner',
      'stop producer',
    ]);
    joined();
    await starting;
    await new Promise((r) => setTimeout(r, 10));
    expect(events.slice(-2)).toEqual(['start archiver', 'stop archiver']);
  });
});
