import { EventEmitter } from 'node:events';
import { ShutdownCoordinator } from '../../../../cli/kit/shutdown';

/** A fake signal source: the coordinator's own logic is under test here, not the roles behind it. */
function setup(timeoutMs = 5_000) {
  const signals = new EventEmitter();
  const lines: string[] = [];
  const coordinator = new ShutdownCoordinator({ timeoutMs, print: (l) => lines.push(l), signals });
  coordinator.install(['SIGTERM', 'SIGINT']);
  return { signals, lines, coordinator };
}

const never = (): Promise<void> => new Promise<void>(() => undefined);

describe('ShutdownCoordinator', () => {
  it('stops targets one at a time in reverse order of registration and resolves 0', async () => {
    const { signals, coordinator, lines } = setup();
    const events: string[] = [];
    for (const name of ['clients', 'archiver', 'producer', 'scanner', 'api']) {
      coordinator.add(name, async () => {
        events.push(`start ${name}`);
        await new Promise((r) => setImmediate(r));
        events.push(`end ${name}`);
      });
    }
    signals.emit('SIGTERM');
    await expect(coordinator.done).resolves.toBe(0);
    expect(events).toEqual([
      'start api',
      'end api',
      'start scanner',
      'end scanner',
      'start producer',
      'end producer',
      'start archiver',
      'end archiver',
      'start clients',
      'end clients',
    ]);
    expect(coordinator.stoppedTargets).toEqual(['api', 'scanner', 'producer', 'archiver', 'clients']);
    expect(lines[0]).toMatch(
      /^ttlstream: SIGTERM received, shutting down gracefully \(at most 5s; send it again to force\)$/,
    );
    expect(signals.listenerCount('SIGTERM')).toBe(0);
  });

  it('exits 1 naming what is still stopping when the budget runs out', async () => {
    const { signals, coordinator, lines } = setup(50);
    const stopped: string[] = [];
    coordinator.add('clients', async () => void stopped.push('clients'));
    coordinator.add('producer', never);
    coordinator.add('api', async () => void stopped.push('api'));
    signals.emit('SIGINT');
    await expect(coordinator.done).resolves.toBe(1);
    expect(stopped).toEqual(['api']);
    expect(lines[lines.length - 1]).toBe(
      'ttlstream: shutdown did not finish within 50ms (still stopping: producer, clients); exiting with code 1',
    );
  });

  it('forces exit 1 on a second signal', async () => {
    const { signals, coordinator, lines } = setup(60_000);
    coordinator.add('archiver', never);
    signals.emit('SIGTERM');
    await new Promise((r) => setImmediate(r));
    signals.emit('SIGINT');
    await expect(coordinator.done).resolves.toBe(1);
    expect(lines[1]).toBe('ttlstream: second SIGINT received, forcing exit while stopping archiver');
  });

  it('keeps stopping the others when one stop fails, and exits 1', async () => {
    const { coordinator, lines } = setup();
    const stopped: string[] = [];
    coordinator.add('clients', async () => void stopped.push('clients'));
    coordinator.add('archiver', async () => {
      throw new Error('commit failed');
    });
    coordinator.add('scanner', async () => void stopped.push('scanner'));
    await expect(coordinator.shutdown('test')).resolves.toBe(1);
    expect(stopped).toEqual(['scanner', 'clients']);
    expect(lines).toContain('ttlstream: stopping archiver failed: commit failed');
  });

  it('passes a requested non-zero code through (a role crashed) and is idempotent', async () => {
    const { coordinator } = setup();
    let stops = 0;
    coordinator.add('scanner', async () => void stops++);
    const first = coordinator.shutdown('scanner crashed', 1);
    const second = coordinator.shutdown('SIGTERM');
    await expect(first).resolves.toBe(1);
    await expect(second).resolves.toBe(1);
    expect(stops).toBe(1);
    expect(() => coordinator.add('late', async () => undefined)).toThrow(/already started/);
  });
});
