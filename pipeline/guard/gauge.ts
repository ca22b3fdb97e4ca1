import type { Logger } from '../../core/logger';
import { metrics } from '../../core/metrics';
import type { GuardRecord } from './store';

/** What the gauge needs of the guard store (./store.ts): the rows of several tables in one batched read. */
export interface GuardRows {
  getMany(tables: readonly string[]): Promise<Map<string, GuardRecord>>;
}

/**
 * `ttlstream_guard_paused`, from the guard state stored in the control table and nothing else: every process that
 * reports it (each producer) re-reads the rows of the enabled tables on a fixed cadence, so every replica reports
 * the same state whichever process paused the table and whichever replica took the confirm or cancel. Set from local
 * events instead, the gauge stayed 1 on the process that paused and went back to 0 only on the one that confirmed, and
 * `max by (table)` never cleared. One read per enabled table per refresh (BatchGetItem, 100 a request): the cost
 * follows the number of enabled tables, not their size.
 */
export class GuardGauge {
  /** Tables this process reports now: a table no longer enabled loses its series instead of keeping its last value. */
  private reported = new Set<string>();

  constructor(
    private readonly rows: GuardRows,
    private readonly enabledTables: () => Promise<Iterable<string>>,
  ) {}

  /** Read the guard rows of the enabled tables and set the gauge from them. Throws (and changes nothing) on a failed read. */
  async refresh(): Promise<void> {
    const tables = [...(await this.enabledTables())];
    const records = await this.rows.getMany(tables);
    for (const table of this.reported) if (!records.has(table)) metrics.guardPaused.remove({ table });
    for (const [table, record] of records)
      metrics.guardPaused.set({ table }, record.state === 'PAUSED' ? 1 : 0);
    this.reported = new Set(records.keys());
  }

  /** Refresh now and then every `intervalMs` until stopped; a failed refresh keeps the last values and is logged. */
  start(intervalMs: number, logger: Logger): { stop(): Promise<void> } {
    let running: Promise<void> | undefined;
    let failing = false;
    const tick = (): void => {
      // A refresh slower than the interval is not overtaken by the next one.
      running ??= this.refresh()
        .then(
          () => {
            if (failing) logger.info('guard gauge: reading the guard state works again');
            failing = false;
          },
          (err: unknown) => {
            // Once per outage, not every interval: the failed requests are counted in ttlstream_sdk_errors_total.
            if (!failing)
              logger.warn({ err }, 'guard gauge: could not read the guard state; keeping the last values');
            failing = true;
          },
        )
        .finally(() => (running = undefined));
    };
    tick();
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    return {
      async stop() {
        clearInterval(timer);
        await running;
      },
    };
  }
}
