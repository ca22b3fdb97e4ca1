import {
  ConditionalCheckFailedException,
  DescribeTableCommand,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
  ResourceNotFoundException,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../core/clients';
import type { ApiSettings, DynamodbSettings, TablesSettings } from '../core/config';
import { ConflictError, DataError, NotFoundError, ValidationError } from '../core/errors';
import { forEachLimited } from '../core/concurrency';
import { labelTable } from '../core/metrics';
import { INTERNAL_KEY, ensureInternalTable, isTtlstreamTable, noControlTable } from '../core/tables';
import { batchGetAll } from '../pipeline/ddb-batch';
import { TableTtlSettingsSchema, deleterOf, type TableTtlSettings } from '../policy/settings';
import {
  CARRIED_SETTINGS,
  describeRow,
  followsStream,
  lastRecordedSettings,
  planMongoModify,
  planUpdate,
  statusOf,
  type LastRecordedSettings,
  type Plan,
  type PlanContext,
  type SettingsRow,
  type TtlDescription,
  type UpdateRequest,
  type UpdateSemantics,
} from './ttl-state';

export type { LastRecordedSettings, TtlDescription, UpdateRequest } from './ttl-state';

/**
 * A table as a reader of its archive sees it: the live table's TTL description, or, once the table no longer
 * exists (or is being deleted), the settings its row last recorded (null when it recorded none).
 */
export type ArchivedTableState =
  { exists: true; description: TtlDescription } | { exists: false; last: LastRecordedSettings | null };

/** A table the streams role follows; `draining` once DynamoDB's TTL no longer deletes its items (read 24 h more). */
export interface FollowedTable {
  table: string;
  draining: boolean;
}

export interface TtlSettingsStoreOptions {
  /** ttlstream's control table (config `tables.control`); created on first use. */
  controlTable: string;
  /** ENABLING/DISABLING → ENABLED/DISABLED delay (config `api.ttlPropagationMs`). */
  propagationMs: number;
  now?: () => number;
  /** ttlstream's own tables, hidden from list() and refused by update(); the control table always is. */
  internalTables?: string[];
}

/** What the store reads of the configuration as the roles open it (a whole configuration is one). */
export interface SettingsStoreInput {
  tables: Pick<TablesSettings, 'control' | 'marks'>;
  api: Pick<ApiSettings, 'ttlPropagationMs'>;
}

/** The store's options as every role opens it: `tables.control`, `api.ttlPropagationMs`, the marks table internal. */
export function settingsStoreOptionsFrom(config: SettingsStoreInput): TtlSettingsStoreOptions {
  return {
    controlTable: config.tables.control,
    propagationMs: config.api.ttlPropagationMs,
    internalTables: [config.tables.marks],
  };
}

/**
 * The tables' TTL settings for a process that may never read them (an archiver member that never purges): the
 * DynamoDB client and the store are made at the first read, not at start. `destroy()` closes the client, if made.
 */
export function settingsOnFirstRead(
  config: SettingsStoreInput & { region: string; dynamodb: DynamodbSettings },
): { describe(table: string): Promise<TtlDescription>; destroy(): void } {
  let ddb: DynamoDBClient | undefined;
  let store: TtlSettingsStore | undefined;
  return {
    describe: (table) => {
      ddb ??= createDynamoClient(config);
      store ??= new TtlSettingsStore(ddb, settingsStoreOptionsFrom(config));
      return store.describe(table);
    },
    destroy: () => ddb?.destroy(),
  };
}

const ROW_PREFIX = 'settings#';
/** Optimistic-concurrency rounds before giving up: each lost round means another writer made progress. */
const MAX_WRITE_ROUNDS = 8;
const DESCRIBE_CONCURRENCY = 8;

/**
 * Per-table TTL settings, shared by every ttlstream process through the control table. Writes are
 * conditional on the version read, so concurrent updates from several processes serialize: the
 * loser re-reads and re-decides (and is then usually refused as "modified multiple times").
 */
export class TtlSettingsStore {
  private readonly controlTable: string;
  private readonly propagationMs: number;
  private readonly now: () => number;
  private readonly internal: Set<string>;
  private readonly ownKind = new Map<string, boolean>();

  constructor(
    private readonly ddb: DynamoDBClient,
    options: TtlSettingsStoreOptions,
  ) {
    this.controlTable = options.controlTable;
    this.propagationMs = options.propagationMs;
    this.now = options.now ?? Date.now;
    this.internal = new Set([options.controlTable, ...(options.internalTables ?? [])]);
  }

  /** NotFoundError if the table does not exist. */
  async describe(table: string): Promise<TtlDescription> {
    const createdAt = await this.tableCreatedAt(table);
    const row = await this.readRow(table);
    const description = describeRow(table, currentIncarnation(row, createdAt), this.now());
    const shards = description.settings?.expiryIndex?.shards;
    if (shards === undefined) return description;
    const { describeExpiryIndex } = await import('./expiry-index');
    const index = await describeExpiryIndex(this.ddb, this.controlTable, table);
    return { ...description, expiryIndex: { ...index, shards } };
  }

  /**
   * describe(), or for a table that no longer exists its last recorded settings instead of a NotFoundError: the
   * archive outlives the table, and reading it (audit) needs the policy that decided its deletions. Read-only.
   */
  async describeEvenIfDropped(table: string): Promise<ArchivedTableState> {
    try {
      return { exists: true, description: await this.describe(table) };
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    return { exists: false, last: lastRecordedSettings(await this.readRow(table)) };
  }

  /** Every table of the account (ListTables, paginated) except ttlstream's own, with its TTL status. */
  async list(): Promise<TtlDescription[]> {
    const listed: string[] = [];
    let start: string | undefined;
    do {
      const page = await this.ddb.send(new ListTablesCommand({ ExclusiveStartTableName: start, Limit: 100 }));
      listed.push(...(page.TableNames ?? []).filter((t) => !this.internal.has(t)));
      start = page.LastEvaluatedTableName;
    } while (start);
    // Every table is described: for the re-created-table check of those with a row, and to leave out
    // ttlstream's tables of other deployments (their names are theirs to choose).
    const createdAt = new Map<string, number | undefined>();
    const hidden = new Set<string>();
    await forEachLimited(listed, DESCRIBE_CONCURRENCY, async (table) => {
      try {
        const info = await this.tableInfo(table);
        if (await this.isOwnKind(table, info)) hidden.add(table);
        createdAt.set(table, info.CreationDateTime?.getTime() ?? 0);
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        createdAt.set(table, Number.NaN); // deleted since ListTables: reported DISABLED
      }
    });
    const tables = listed.filter((t) => !hidden.has(t));
    const rows = await this.readRows(tables);
    const now = this.now();
    return tables.map((t) => describeRow(t, currentIncarnation(rows.get(t) ?? null, createdAt.get(t)), now));
  }

  /** Enable or disable TTL (see planUpdate for the rules). `by` is recorded as changedBy. */
  async update(
    table: string,
    req: UpdateRequest,
    by: string,
    semantics: UpdateSemantics = 'ttlstream',
  ): Promise<TtlDescription> {
    const request = validateRequest(req);
    return this.write(table, by, (row, ctx) => planUpdate(row, request, ctx, semantics));
  }

  /** Like MongoDB's collMod: change expireAfterSeconds (or "off") in place on a mongo-mode table. */
  async modifyMongo(table: string, expireAfterSeconds: number | 'off', by: string): Promise<TtlDescription> {
    return this.write(table, by, (row, ctx) => planMongoModify(row, expireAfterSeconds, ctx));
  }

  /**
   * Tables whose TTL is ENABLED now, with their settings: what the scanner works on. Tables that no
   * longer exist, or were re-created since TTL was enabled, are left out.
   */
  async enabledTables(): Promise<Array<{ table: string; settings: TableTtlSettings }>> {
    await ensureInternalTable(this.ddb, this.controlTable);
    const candidates = await this.scanRows('begins_with(#pk, :prefix) AND #enabled = :true', {
      ':true': { BOOL: true },
    });
    const now = this.now();
    const out: Array<{ table: string; settings: TableTtlSettings }> = [];
    await forEachLimited(candidates, DESCRIBE_CONCURRENCY, async (row) => {
      if (statusOf(row, now) !== 'ENABLED' || !row.settings || this.internal.has(row.table)) return;
      let createdAt: number;
      try {
        createdAt = await this.tableCreatedAt(row.table);
      } catch (err) {
        if (err instanceof NotFoundError) return;
        throw err;
      }
      if (currentIncarnation(row, createdAt)) out.push({ table: row.table, settings: row.settings });
    });
    return out.sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : 0));
  }

  /**
   * Tables whose stream the streams role follows now (ttl-state.ts followsStream): DynamoDB's own TTL deletes their
   * items, or did less than a stream retention ago (`draining`). Tables that no longer exist are kept: their streams
   * are read to their end. Read-only, like describe(): a missing control table holds no settings.
   */
  async followedTables(): Promise<FollowedTable[]> {
    const rows = await this.scanRows(
      'begins_with(#pk, :prefix) AND (#enabled = :true OR attribute_exists(#followUntil))',
      { ':true': { BOOL: true } },
      { '#followUntil': 'streamFollowUntil' },
    ).catch((err: unknown) => {
      if (err instanceof ResourceNotFoundException) return [];
      throw err;
    });
    const now = this.now();
    return rows
      .filter((row) => !this.internal.has(row.table) && followsStream(row, now))
      .map((row) => ({
        table: row.table,
        draining: !(row.enabled && row.settings !== null && deleterOf(row.settings) === 'dynamodb'),
      }))
      .sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : 0));
  }

  /** The settings rows the filter keeps, read with consistent Scans page after page. */
  private async scanRows(
    filter: string,
    values: Record<string, AttributeValue>,
    names: Record<string, string> = {},
  ): Promise<SettingsRow[]> {
    const rows: SettingsRow[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.ddb.send(
        new ScanCommand({
          TableName: this.controlTable,
          ConsistentRead: true,
          FilterExpression: filter,
          ExpressionAttributeNames: { '#pk': INTERNAL_KEY, '#enabled': 'enabled', ...names },
          ExpressionAttributeValues: { ':prefix': { S: ROW_PREFIX }, ...values },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) rows.push(labelled(decodeRow(item)));
      start = page.LastEvaluatedKey;
    } while (start);
    return rows;
  }

  private async write(
    table: string,
    by: string,
    plan: (row: SettingsRow | null, ctx: PlanContext) => Plan,
  ): Promise<TtlDescription> {
    // Only a write creates the control table: reads of a missing one mean "no settings", so read-only
    // IAM roles can run `ttl list`, `ttl describe` and `guard status`.
    await ensureInternalTable(this.ddb, this.controlTable);
    if (this.internal.has(table))
      throw new ValidationError(`table ${table} is ttlstream's own table; its TTL cannot be set`);
    const info = await this.tableInfo(table);
    if (await this.isOwnKind(table, info)) {
      throw new ValidationError(
        `table ${table} holds ttlstream control data or marks (of this or another deployment); its TTL cannot be set`,
      );
    }
    const createdAt = info.CreationDateTime?.getTime() ?? 0;
    for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
      const stored = await this.readRow(table);
      const current = currentIncarnation(stored, createdAt);
      const now = this.now();
      const decision = plan(current, {
        table,
        now,
        propagationMs: this.propagationMs,
        by,
        tableCreatedAt: createdAt,
      });
      if (decision.kind === 'noop') return describeRow(table, current, now);
      // The version continues from the stored row even when it belonged to an earlier table.
      const row: SettingsRow = { ...decision.row, version: (stored?.version ?? 0) + 1 };
      try {
        await this.ddb.send(
          new PutItemCommand({
            TableName: this.controlTable,
            Item: encodeRow(row),
            ...(stored
              ? {
                  ConditionExpression: '#version = :version',
                  ExpressionAttributeNames: { '#version': 'version' },
                  ExpressionAttributeValues: { ':version': { N: String(stored.version) } },
                }
              : {
                  ConditionExpression: 'attribute_not_exists(#pk)',
                  ExpressionAttributeNames: { '#pk': INTERNAL_KEY },
                }),
          }),
        );
        return describeRow(table, row, now);
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        // Another process wrote first: re-read and decide again against its result.
      }
    }
    throw new ConflictError(`TTL settings of table ${table} are being changed concurrently; try again`);
  }

  /**
   * Whether the table is a ttlstream table of any deployment (isTtlstreamTable), remembered per table
   * incarnation: a table does not change kind, and list() asks for every table of the account.
   */
  private async isOwnKind(table: string, info: TableDescription): Promise<boolean> {
    const key = `${table}@${info.CreationDateTime?.getTime() ?? 0}`;
    const known = this.ownKind.get(key);
    if (known !== undefined) return known;
    const own = await isTtlstreamTable(this.ddb, table, info);
    // Bounded by the account's tables; a deleted table's entry is merely never asked for again.
    this.ownKind.set(key, own);
    return own;
  }

  /** CreationDateTime (ms) of the table; NotFoundError if it does not exist or is being deleted. */
  private async tableCreatedAt(table: string): Promise<number> {
    return (await this.tableInfo(table)).CreationDateTime?.getTime() ?? 0;
  }

  /** DescribeTable; NotFoundError if the table does not exist or is being deleted. */
  private async tableInfo(table: string): Promise<TableDescription> {
    try {
      const { Table } = await this.ddb.send(new DescribeTableCommand({ TableName: table }));
      if (Table?.TableStatus === 'DELETING') {
        throw new NotFoundError(`Requested resource not found: Table: ${table} is being deleted`);
      }
      return Table ?? {};
    } catch (err) {
      if (err instanceof ResourceNotFoundException) {
        throw new NotFoundError(`Requested resource not found: Table: ${table} not found`);
      }
      throw err;
    }
  }

  private async readRow(table: string): Promise<SettingsRow | null> {
    const out = await this.ddb
      .send(new GetItemCommand({ TableName: this.controlTable, Key: rowKey(table), ConsistentRead: true }))
      .catch(noControlTable);
    return out?.Item ? labelled(decodeRow(out.Item)) : null;
  }

  private async readRows(tables: string[]): Promise<Map<string, SettingsRow>> {
    const rows = new Map<string, SettingsRow>();
    const items = await batchGetAll(this.ddb, this.controlTable, tables.map(rowKey)).catch(noControlTable);
    for (const item of items ?? []) {
      const row = labelled(decodeRow(item));
      rows.set(row.table, row);
    }
    return rows;
  }
}

/** A table with TTL settings gets its own metrics label (core/metrics.ts bounds the rest to `other`). */
function labelled(row: SettingsRow): SettingsRow {
  labelTable(row.table);
  return row;
}

/** A row written for an earlier table of the same name does not apply to the current one. */
function currentIncarnation(row: SettingsRow | null, tableCreatedAt: number | undefined): SettingsRow | null {
  if (!row) return null;
  if (row.tableCreatedAt !== undefined && row.tableCreatedAt !== tableCreatedAt) return null;
  return row;
}

function validateRequest(req: UpdateRequest): UpdateRequest {
  if (typeof req?.enabled !== 'boolean') throw new ValidationError('enabled: expected a boolean');
  const carry = req.carry?.length ? { carry: req.carry.filter((k) => CARRIED_SETTINGS.includes(k)) } : {};
  if (req.settings === undefined) return { enabled: req.enabled, ...carry };
  const parsed = TableTtlSettingsSchema.safeParse(req.settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ValidationError(`settings.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return { enabled: req.enabled, settings: parsed.data, ...carry };
}

function rowKey(table: string): Record<string, AttributeValue> {
  return { [INTERNAL_KEY]: { S: ROW_PREFIX + table } };
}

/**
 * Settings are stored as a JSON string, not a map: dynalite cannot compare maps in conditions, and
 * the string round-trips every mode's fields (including defaultTtl null) exactly.
 */
export function encodeRow(row: SettingsRow): Record<string, AttributeValue> {
  return {
    ...rowKey(row.table),
    kind: { S: 'ttl-settings' },
    table: { S: row.table },
    enabled: { BOOL: row.enabled },
    ...(row.settings ? { settings: { S: JSON.stringify(row.settings) } } : {}),
    changedAt: { N: String(row.changedAt) },
    changedBy: { S: row.changedBy },
    settlesAt: { N: String(row.settlesAt) },
    version: { N: String(row.version) },
    ...(row.tableCreatedAt !== undefined ? { tableCreatedAt: { N: String(row.tableCreatedAt) } } : {}),
    ...(row.streamFollowUntil !== undefined
      ? { streamFollowUntil: { N: String(row.streamFollowUntil) } }
      : {}),
  };
}

export function decodeRow(item: Record<string, AttributeValue>): SettingsRow {
  const pk = item[INTERNAL_KEY]?.S ?? '';
  const table = item.table?.S ?? pk.slice(ROW_PREFIX.length);
  const num = (name: string): number => {
    const n = Number(item[name]?.N);
    if (!Number.isFinite(n))
      throw new DataError(`control table row ${pk}: attribute ${name} is missing or not a number`);
    return n;
  };
  let settings: TableTtlSettings | null = null;
  const raw = item.settings?.S;
  if (raw !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new DataError(`control table row ${pk}: settings are not valid JSON`);
    }
    const parsed = TableTtlSettingsSchema.safeParse(json);
    if (!parsed.success) throw new DataError(`control table row ${pk}: settings do not match the schema`);
    settings = parsed.data;
  }
  const createdAt = item.tableCreatedAt?.N;
  const followUntil = item.streamFollowUntil?.N;
  return {
    table,
    enabled: item.enabled?.BOOL === true,
    settings,
    changedAt: num('changedAt'),
    changedBy: item.changedBy?.S ?? '',
    settlesAt: num('settlesAt'),
    version: num('version'),
    ...(createdAt !== undefined ? { tableCreatedAt: Number(createdAt) } : {}),
    ...(followUntil !== undefined ? { streamFollowUntil: Number(followUntil) } : {}),
  };
}
