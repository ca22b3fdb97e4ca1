import type { Logger } from '../../core/logger';
import { formatDuration } from './duration';
import { NotRunningError } from '../../core/errors';

/** Something with a graceful stop: a role, a server, the clients. */
export interface StopTarget {
  name: string;
  stop(): Promise<void>;
}

/** The part of `process` the coordinator listens on; injected so tests can send fake signals. */
export interface SignalSource {
  on(event: NodeJS.Signals, listener: () => void): unknown;
  off(event: NodeJS.Signals, listener: () => void): unknown;
}

export interface ShutdownOptions {
  /** Budget for the whole graceful stop; after it the process exits 1 with a message. */
  timeoutMs: number;
  /** One human line on stderr per event (signal received, timeout, forced exit). */
  print: (line: string) => void;
  logger?: Logger;
  signals?: SignalSource;
}

/**
 * Graceful shutdown for `ttlstream run`. Targets are stopped one at a time in reverse order of
 * registration (like deferred cleanups): register the clients first and the API last, and a stop
 * takes the API down (no new requests), then the scanner (no new marks), the producer (finishes or
 * hands back its in-flight batch and releases its leases), the archiver (flushes, commits), and
 * finally closes the clients. Nothing here decides correctness: every role is crash-safe on its own,
 * so the timeout and the forced exit on a second signal only cost redone work, never lost work.
 */
export class ShutdownCoordinator {
  readonly done: Promise<number>;
  private readonly targets: StopTarget[] = [];
  private readonly installed: Array<[NodeJS.Signals, () => void]> = [];
  private resolveDone: (code: number) => void = () => undefined;
  private started = false;
  private finished = false;
  private timer: NodeJS.Timeout | undefined;
  private stopping: string | undefined;
  private readonly stopped: string[] = [];

  constructor(private readonly options: ShutdownOptions) {
    this.done = new Promise<number>((resolve) => (this.resolveDone = resolve));
  }

  add(name: string, stop: () => Promise<void>): void {
    if (this.started) throw new NotRunningError(`cannot register ${name}: shutdown already started`);
    this.targets.push({ name, stop });
  }

  get isShuttingDown(): boolean {
    return this.started;
  }

  /** Names of the targets that finished stopping, in order (for tests and the final log line). */
  get stoppedTargets(): readonly string[] {
    return this.stopped;
  }

  install(signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): void {
    const source = this.options.signals ?? process;
    for (const signal of signals) {
      const listener = (): void => this.onSignal(signal);
      source.on(signal, listener);
      this.installed.push([signal, listener]);
    }
  }

  private onSignal(signal: NodeJS.Signals): void {
    if (!this.started) {
      this.options.print(
        `ttlstream: ${signal} received, shutting down gracefully (at most ${formatDuration(this.options.timeoutMs)}; send it again to force)`,
      );
      void this.shutdown(signal);
      return;
    }
    this.options.print(
      `ttlstream: second ${signal} received, forcing exit while stopping ${this.stopping ?? 'nothing'}`,
    );
    this.finish(1);
  }

  /** Start the graceful stop (idempotent). Resolves with the exit code: `code` on success, 1 otherwise. */
  shutdown(reason: string, code = 0): Promise<number> {
    if (this.started) return this.done;
    this.started = true;
    this.options.logger?.info({ reason }, 'shutdown started');
    this.timer = setTimeout(() => {
      const pending = this.targets
        .map((t) => t.name)
        .filter((n) => !this.stopped.includes(n))
        .reverse();
      this.options.print(
        `ttlstream: shutdown did not finish within ${formatDuration(this.options.timeoutMs)} (still stopping: ${pending.join(', ') || 'nothing'}); exiting with code 1`,
      );
      this.finish(1);
    }, this.options.timeoutMs);
    void this.stopAll(code);
    return this.done;
  }

  private async stopAll(code: number): Promise<void> {
    let failed = false;
    for (const target of [...this.targets].reverse()) {
      if (this.finished) return;
      this.stopping = target.name;
      try {
        await target.stop();
        this.stopped.push(target.name);
      } catch (err) {
        failed = true;
        this.stopped.push(target.name);
        this.options.logger?.error({ err, target: target.name }, 'stop failed');
        this.options.print(
          `ttlstream: stopping ${target.name} failed: ${(err as Error).message ?? String(err)}`,
        );
      }
    }
    this.stopping = undefined;
    this.options.logger?.info({ stopped: this.stopped }, 'shutdown complete');
    this.finish(failed ? 1 : code);
  }

  private finish(code: number): void {
    if (this.finished) return;
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.uninstall();
    this.resolveDone(code);
  }

  uninstall(): void {
    const source = this.options.signals ?? process;
    for (const [signal, listener] of this.installed.splice(0)) source.off(signal, listener);
  }
}
