import {
  CreateTableCommand,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  type AttributeValue,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { TimedOutError } from './errors';

/**
 * ttlstream's own tables have a single string hash key `pk`. Row kinds are told apart by the key
 * prefix (`settings#<table>`, `lease#scan#<table>#<segment>`, `guard#<table>`, ...), so one control
 * table serves every process without extra provisioning.
 */
export const INTERNAL_KEY = 'pk';

const ensured = new WeakMap<DynamoDBClient, Set<string>>();

/** The sort key of internal tables that need one (the marks table: rows of one shard read with one Query). */
export const INTERNAL_SORT_KEY = 'sk';

/**
 * For `.catch` on a read of the control table: a control table that does not exist (yet) holds no rows (read-only
 * roles must not create it), so the read finds nothing; any other error is rethrown.
 */
export function noControlTable(err: unknown): undefined {
  if (err instanceof ResourceNotFoundException) return undefined;
  throw err;
}

/**
 * Create the table if missing and wait until ACTIVE. Safe to call from many processes at once.
 * `options.sortKey` adds a string range key (e.g. INTERNAL_SORT_KEY); without it the table has `pk` only.
 */
export async function ensureInternalTable(
  ddb: DynamoDBClient,
  tableName: string,
  options: { sortKey?: string } = {},
): Promise<void> {
  const done = ensured.get(ddb) ?? new Set<string>();
  ensured.set(ddb, done);
  if (done.has(tableName)) return;
  const sortKey = options.sortKey;
  try {
    await ddb.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [
          { AttributeName: INTERNAL_KEY, AttributeType: 'S' },
          ...(sortKey ? [{ AttributeName: sortKey, AttributeType: 'S' as const }] : []),
        ],
        KeySchema: [
          { AttributeName: INTERNAL_KEY, KeyType: 'HASH' },
          ...(sortKey ? [{ AttributeName: sortKey, KeyType: 'RANGE' as const }] : []),
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  await waitForActive(ddb, tableName);
  // The marker tells any deployment that this table is ttlstream's, whatever it is called, so none
  // sets TTL on it (a TTL pass over another deployment's control or marks table would delete its
  // settings, leases or pending deletions). Written on every start, so older tables get it too.
  await ddb.send(new PutItemCommand({ TableName: tableName, Item: markerKey(sortKey) }));
  done.add(tableName);
}

/** The key of the marker row every ttlstream table holds (see ensureInternalTable). */
export const MARKER_VALUE = 'ttlstream#table';

function markerKey(sortKey: string | undefined): Record<string, AttributeValue> {
  return {
    [INTERNAL_KEY]: { S: MARKER_VALUE },
    ...(sortKey ? { [sortKey]: { S: MARKER_VALUE } } : {}),
  };
}

/**
 * Whether a table is one of ttlstream's own (control or marks, of any deployment): its key is that
 * of an internal table (string `pk`, optionally string `sk`) and it holds the marker row.
 */
export async function isTtlstreamTable(
  ddb: DynamoDBClient,
  tableName: string,
  table: Pick<TableDescription, 'KeySchema' | 'AttributeDefinitions'> | undefined,
): Promise<boolean> {
  const keys = table?.KeySchema ?? [];
  const types = new Map((table?.AttributeDefinitions ?? []).map((d) => [d.AttributeName, d.AttributeType]));
  const hash = keys.find((k) => k.KeyType === 'HASH')?.AttributeName;
  const range = keys.find((k) => k.KeyType === 'RANGE')?.AttributeName;
  if (hash !== INTERNAL_KEY || types.get(hash) !== 'S') return false;
  if (range !== undefined && (range !== INTERNAL_SORT_KEY || types.get(range) !== 'S')) return false;
  const { Item } = await ddb.send(
    new GetItemCommand({ TableName: tableName, Key: markerKey(range), ConsistentRead: true }),
  );
  return Item !== undefined;
}

export async function waitForActive(
  ddb: DynamoDBClient,
  tableName: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { Table } = await ddb.send(new DescribeTableCommand({ TableName: tableName }));
      if (Table?.TableStatus === 'ACTIVE') return;
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err;
    }
    if (Date.now() > deadline)
      throw new TimedOutError(`table ${tableName} did not become ACTIVE within ${timeoutMs} ms`);
    await sleep(100);
  }
}
