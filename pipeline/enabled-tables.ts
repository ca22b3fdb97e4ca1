import { deleterOf, type Deleter, type TableTtlSettings } from '../policy/settings';

/** What the scanner and the producer need of the settings store (control/settings-store.ts). */
export interface EnabledTablesSource {
  enabledTables(): Promise<Array<{ table: string; settings: TableTtlSettings }>>;
}

/**
 * The ENABLED tables whose expired items `deleter` deletes, and their settings, re-read at most every `refreshMs`. A
 * failed refresh throws instead of serving the old answer: acting on stale settings could delete from a table whose
 * TTL was just disabled, or whose items DynamoDB's own TTL now deletes.
 */
export class EnabledTables {
  private cached?: { at: number; tables: Map<string, TableTtlSettings> };
  private pending?: Promise<Map<string, TableTtlSettings>>;

  constructor(
    private readonly source: EnabledTablesSource,
    private readonly refreshMs: number,
    private readonly now: () => number = Date.now,
    private readonly deleter: Deleter = 'ttlstream',
  ) {}

  async get(): Promise<Map<string, TableTtlSettings>> {
    if (this.cached && this.now() - this.cached.at < this.refreshMs) return this.cached.tables;
    this.pending ??= (async () => {
      try {
        const at = this.now();
        const list = await this.source.enabledTables();
        const mine = list.filter((t) => deleterOf(t.settings) === this.deleter);
        const tables = new Map(mine.map((t) => [t.table, t.settings]));
        this.cached = { at, tables };
        return tables;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }
}
