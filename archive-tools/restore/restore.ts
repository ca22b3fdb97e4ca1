import {
  ConditionalCheckFailedException,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  ResourceNotFoundException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { NotFoundError, ValidationError } from '../../core/errors';
import { silentLogger, type Logger } from '../../core/logger';
import { forEachLimited } from '../../core/concurrency';
import { isRetryable, withRetry } from '../../core/retry';
import type { Item, TableTtlSettings, TtlPolicy } from '../../policy';
import { openCatalog, normalizeKey, compareVersions, inRange, type CatalogRow } from '../../archive/catalog';
import { readRemoves } from '../../archive/reader';
import type { ArchiveStorage } from '../../archive/storage';
import { attributeMapsEqual, type ArchivedRecord } from '../../schemas';
import { parseOptions, RestoreOptionsSchema, type RestoreOptions, type RestoreOptionsInput } from './options';
import { applyRestoreTtl, effectivePolicy } from './ttl';

/** The part of the control plane's TtlSettingsStore that restore needs. */
export interface TtlSettingsLookup {
  /** The table's TTL settings (null when TTL is off); may throw NotFoundError. */
  describe(table: string): Promise<{ settings: TableTtlSettings | null } | null | undefined>;
}

export interface RestoreDeps {
  storage: ArchiveStorage;
  ddb: DynamoDBClient;
  settingsStore?: TtlSettingsLookup;
  logger?: Logger;
  /** The clock for TTL extension; tests pin it. */
  now?: () => number;
}

export interface RestoreFailure {
  /** Canonical JSON of the item key. */
  key: string;
  reason: string;
}

export interface RestoreResult {
  /** Items written (0 in a dry run). */
  restored: number;
  /** Items that exist now and were left alone (not with `overwrite`). */
  skippedPresent: number;
  /** Keys whose every matching archived deletion was retracted (the deletion never happened). */
  skippedRetracted: number;
  failed: RestoreFailure[];
  /** Items written with `ttl: "keep"` that are already expired and will be deleted again. */
  expiresAgain: number;
  /** Dry run only: what would be written. */
  wouldWrite?: Array<{ key: string; item: Item }>;
}

export type RestoreProgress = (done: number, total: number) => void;

interface KeySchemaOf {
  hashKey: string;
  rangeKey?: string;
}

/**
 * Bring archived items back: for each matching key, the latest archived deletion (by deletion time,
 * then SequenceNumber) that was not retracted, with its TTL handled as `ttl` says, written with a
 * condition that the item does not exist now (unless `overwrite`). The counts add up to the number
 * of matching keys: restored (or would be) + skippedPresent + skippedRetracted + failed.
 */
export async function restore(
  deps: RestoreDeps,
  input: RestoreOptionsInput & { onProgress?: RestoreProgress },
): Promise<RestoreResult> {
  const { onProgress, ...rest } = input;
  const options = parseOptions(RestoreOptionsSchema, rest, 'restore');
  const logger = (deps.logger ?? silentLogger).child({ component: 'restore', table: options.table });
  const now = deps.now ?? Date.now;
  const target = options.targetTable ?? options.table;

  const keySchema = await describeKeys(deps.ddb, target);
  const policy = await resolvePolicy(deps, options, target);
  const key = options.key === undefined ? undefined : normalizeKey(options.key as Item | string);

  const chosen = await chooseVersions(deps.storage, options, key, keySchema.hashKey);
  const result: RestoreResult = {
    restored: 0,
    skippedPresent: 0,
    skippedRetracted: chosen.retractedOnly,
    failed: [],
    expiresAgain: 0,
    ...(options.dryRun ? { wouldWrite: [] } : {}),
  };
  const total = chosen.rows.length + chosen.retractedOnly;
  let done = chosen.retractedOnly;
  onProgress?.(done, total);
  logger.info(
    { target, keys: total, retractedOnly: chosen.retractedOnly, dryRun: options.dryRun },
    'restore: versions chosen',
  );

  const files = new FileRecords(deps.storage, groupByFile(chosen.rows));
  // One pool over all rows (in file order), so writes never wait for a file boundary.
  await forEachLimited(files.rows, options.concurrency, async (row) => {
    try {
      let records;
      try {
        records = await files.take(row.file);
      } catch (err) {
        throw new ValidationError(`archive file unreadable: ${(err as Error).message}`, { cause: err });
      }
      const record = records.get(row.eventID)?.record;
      if (!record) throw new ValidationError(`record ${row.eventID} not found in ${row.file}`);
      const missing = [keySchema.hashKey, keySchema.rangeKey].filter(
        (k): k is string => k !== undefined && record.dynamodb.OldImage[k] === undefined,
      );
      if (missing.length > 0)
        throw new ValidationError(`the image lacks ${target}'s key attribute(s) ${missing.join(', ')}`);
      const { item, warning } = applyRestoreTtl(record.dynamodb.OldImage, policy, options.ttl, now());
      if (warning) {
        result.expiresAgain += 1;
        logger.warn({ key: row.key }, warning);
      }
      const outcome = options.dryRun
        ? await dryRunOne(deps.ddb, target, keyOf(item, keySchema), options.overwrite)
        : await putOne(deps.ddb, target, item, keySchema, options.overwrite);
      if (outcome === 'present') result.skippedPresent += 1;
      else if (options.dryRun) result.wouldWrite?.push({ key: row.key, item });
      else result.restored += 1;
    } catch (err) {
      result.failed.push({ key: row.key, reason: (err as Error).message });
      logger.warn({ key: row.key, err }, 'restore: item failed');
    } finally {
      files.done(row.file);
      done += 1;
      onProgress?.(done, total);
    }
  });
  reportRestored(result, files.rows, logger);
  return result;
}

/**
 * The pool finishes rows in any order: the result's lists are put back in the archive's order, so a restore prints the
 * same twice; then the counts are logged.
 */
function reportRestored(result: RestoreResult, rows: CatalogRow[], logger: Logger): void {
  const position = new Map(rows.map((row, i) => [row.key, i]));
  const order = (a: { key: string }, b: { key: string }): number =>
    (position.get(a.key) ?? 0) - (position.get(b.key) ?? 0);
  result.wouldWrite?.sort(order);
  result.failed.sort(order);
  logger.info(
    {
      restored: result.restored,
      skippedPresent: result.skippedPresent,
      skippedRetracted: result.skippedRetracted,
      failed: result.failed.length,
      wouldWrite: result.wouldWrite?.length,
    },
    'restore: done',
  );
}

/**
 * Per key, the newest non-retracted deletion in the window. Retractions are read from the window's
 * start to the end of the archive, since one can land after the window it retracts in.
 */
async function chooseVersions(
  storage: ArchiveStorage,
  options: RestoreOptions,
  key: string | undefined,
  hashKey: string,
): Promise<{ rows: CatalogRow[]; retractedOnly: number }> {
  const catalog = openCatalog(storage);
  const removes: CatalogRow[] = [];
  const retracted = new Set<string>();
  const window = { fromMs: options.fromMs, toMs: options.toMs };
  for await (const row of catalog.scan(options.table, {
    ...(key !== undefined ? { key } : {}),
    ...(options.keyPrefix !== undefined ? { keyPrefix: options.keyPrefix, hashKey } : {}),
    ...(options.fromMs !== undefined ? { fromMs: options.fromMs } : {}),
  })) {
    if (row.kind === 'retract') retracted.add(row.retractsEventID ?? row.eventID);
    else if (inRange(row.deletedAtMs, window)) removes.push(row);
  }
  const best = new Map<string, CatalogRow>();
  const matched = new Set<string>();
  for (const row of removes) {
    const k = normalizeKey(row.key);
    matched.add(k);
    if (retracted.has(row.eventID)) continue;
    const current = best.get(k);
    if (!current || compareVersions(current, row) < 0) best.set(k, row);
  }
  return { rows: [...best.values()], retractedOnly: matched.size - best.size };
}

/**
 * The records of the chosen rows, one data file read per file: loaded when its first row is
 * taken (the next file is read ahead), dropped when its last row is done, so memory holds about
 * two files whatever the size of the restore.
 */
class FileRecords {
  readonly rows: CatalogRow[];
  private readonly nextOf = new Map<string, string>();
  private readonly pending = new Map<string, number>();
  private readonly loaded = new Map<string, Promise<Map<string, ArchivedRecord>>>();

  constructor(
    private readonly storage: ArchiveStorage,
    private readonly byFile: Map<string, CatalogRow[]>,
  ) {
    const order = [...byFile.keys()];
    order.forEach((file, i) => {
      const next = order[i + 1];
      if (next !== undefined) this.nextOf.set(file, next);
    });
    this.rows = [...byFile.values()].flat();
    for (const [file, rows] of byFile) this.pending.set(file, rows.length);
  }

  take(file: string): Promise<Map<string, ArchivedRecord>> {
    const records = this.load(file);
    const next = this.nextOf.get(file);
    if (next !== undefined && this.pending.get(next)) this.load(next);
    return records;
  }

  done(file: string): void {
    const left = (this.pending.get(file) ?? 1) - 1;
    this.pending.set(file, left);
    if (left === 0) this.loaded.delete(file);
  }

  private load(file: string): Promise<Map<string, ArchivedRecord>> {
    let records = this.loaded.get(file);
    if (!records) {
      const ids = (this.byFile.get(file) ?? []).map((r) => r.eventID);
      records = readRemoves(this.storage, file, ids);
      // Awaited by the rows of the file; this only keeps a read-ahead failure from being unhandled.
      records.catch(() => undefined);
      this.loaded.set(file, records);
    }
    return records;
  }
}

function groupByFile(rows: CatalogRow[]): Map<string, CatalogRow[]> {
  const out = new Map<string, CatalogRow[]>();
  for (const row of rows) {
    const list = out.get(row.file) ?? [];
    list.push(row);
    out.set(row.file, list);
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

async function describeKeys(ddb: DynamoDBClient, table: string): Promise<KeySchemaOf> {
  let schema;
  try {
    const out = await withRetry(() => ddb.send(new DescribeTableCommand({ TableName: table })), {
      retries: 5,
      isRetryable,
    });
    schema = out.Table?.KeySchema;
  } catch (err) {
    // A dropped table's archive outlives it (audit, replay and `archive show` still read it); restore needs a table.
    if (err instanceof ResourceNotFoundException)
      throw new NotFoundError(
        `table ${table} does not exist: restore writes into an existing table (re-create it with the same key schema, or name another with --target-table)`,
      );
    throw err;
  }
  const hashKey = schema?.find((k) => k.KeyType === 'HASH')?.AttributeName;
  if (!hashKey) throw new ValidationError(`table ${table} has no hash key in its description`);
  const rangeKey = schema?.find((k) => k.KeyType === 'RANGE')?.AttributeName;
  return rangeKey ? { hashKey, rangeKey } : { hashKey };
}

/**
 * The TTL policy that will act on the written items: the target's settings, else the source's,
 * else DynamoDB semantics on `ttlAttribute`. When the settings store says TTL is off on both and no
 * attribute is given, nothing expires the items, so they are written as they were deleted.
 */
async function resolvePolicy(
  deps: RestoreDeps,
  options: RestoreOptions,
  target: string,
): Promise<TtlPolicy | null> {
  let consulted = false;
  if (deps.settingsStore) {
    for (const table of target === options.table ? [target] : [target, options.table]) {
      let settings: TableTtlSettings | null | undefined;
      try {
        settings = (await deps.settingsStore.describe(table))?.settings;
        consulted = true;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
      if (settings) return settings.policy;
    }
  }
  if (options.ttlAttribute === undefined && consulted) {
    if (options.ttl !== 'keep')
      (deps.logger ?? silentLogger).warn(
        { table: options.table, target },
        'restore: TTL is off on the table(s) and no ttlAttribute was given; items are written as deleted',
      );
    return null;
  }
  return effectivePolicy(undefined, options.ttlAttribute, options.ttl);
}

function keyOf(item: Item, keys: KeySchemaOf): Item {
  const out: Item = { [keys.hashKey]: item[keys.hashKey] as Item[string] };
  if (keys.rangeKey) out[keys.rangeKey] = item[keys.rangeKey] as Item[string];
  return out;
}

const RETRY = { retries: 8, isRetryable };

async function putOne(
  ddb: DynamoDBClient,
  table: string,
  item: Item,
  keys: KeySchemaOf,
  overwrite: boolean,
): Promise<'written' | 'present'> {
  const command = new PutItemCommand({
    TableName: table,
    Item: item,
    ...(overwrite
      ? {}
      : {
          ConditionExpression: 'attribute_not_exists(#k)',
          ExpressionAttributeNames: { '#k': keys.hashKey },
        }),
  });
  let sent = 0;
  try {
    await withRetry(() => {
      sent += 1;
      return ddb.send(command);
    }, RETRY);
    return 'written';
  } catch (err) {
    const e = err as { name?: string; $metadata?: { attempts?: number } };
    if (!(err instanceof ConditionalCheckFailedException) && e.name !== 'ConditionalCheckFailedException')
      throw err;
    // After a retried send, the "existing" item may be this very write whose reply was lost.
    const retried = sent > 1 || (e.$metadata?.attempts ?? 1) > 1;
    if (retried) {
      const now = await withRetry(
        () =>
          ddb.send(new GetItemCommand({ TableName: table, Key: keyOf(item, keys), ConsistentRead: true })),
        RETRY,
      );
      if (now.Item && attributeMapsEqual(now.Item, item)) return 'written';
    }
    return 'present';
  }
}

async function dryRunOne(
  ddb: DynamoDBClient,
  table: string,
  key: Item,
  overwrite: boolean,
): Promise<'written' | 'present'> {
  if (overwrite) return 'written';
  const out = await withRetry(
    () =>
      ddb.send(
        new GetItemCommand({
          TableName: table,
          Key: key,
          ConsistentRead: true,
          ProjectionExpression: '#k',
          ExpressionAttributeNames: { '#k': Object.keys(key)[0] as string },
        }),
      ),
    RETRY,
  );
  return out.Item ? 'present' : 'written';
}
