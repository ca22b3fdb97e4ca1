import type {
  AttributeValue,
  AttributeValueUpdate,
  BatchWriteItemCommandInput,
  DynamoDBClient,
  PutItemCommandInput,
  ServiceInputTypes,
  ServiceOutputTypes,
  TransactWriteItem,
  TransactWriteItemsCommandInput,
  UpdateItemCommandInput,
  WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { InitializeMiddleware, Pluggable } from '@smithy/types';
import { ConfigError, ValidationError } from '../core/errors';
import type { TableTtlSettings } from './settings';
import { stampExpiryIndex, type ExpiryStampTable } from './expiry-stamp';
import { addSetAssignment, topLevelAttributes } from './update-expression';

/**
 * Cosmos DB's "TTL resets after every modification" (seed 000) for a DynamoDB-API table: every write
 * this client sends to a configured table carries the last-write time, so a rewrite moves the expiry
 * and makes a pending conditional delete fail.
 *
 * The stamp is the writer's clock (Cosmos's `_ts` is the server's): keep writers' clocks in sync.
 */
export interface LastWriteStampOptions {
  /** Table name → the attribute that receives the stamp (cosmos mode's `lastWriteAttribute`). */
  tables: Record<string, { lastWriteAttribute: string }>;
  /** The clock, in ms since the epoch; Date.now by default. */
  now?: () => number;
  /**
   * 'seconds' (default) stamps whole epoch seconds, as Cosmos's `_ts`; 'milliseconds' stamps seconds
   * with three decimals, so two writes within the same second still differ.
   */
  resolution?: 'seconds' | 'milliseconds';
  /**
   * Tables with an expiry index (decision 0011): every write also gets the shard attribute and, in cosmos mode, the
   * derived expiry (`expiryStampTables` builds this from the TTL settings and key schemas). A cosmos table here
   * needs its entry in `tables` too: the derived expiry counts from the last-write stamp.
   */
  expiryIndex?: Record<string, ExpiryStampTable>;
}

export const LAST_WRITE_STAMP_MIDDLEWARE = 'ttlstreamLastWriteStamp';

/** The fields UpdateItem and a transaction's Update share. */
interface ExpressionUpdate {
  TableName?: string | undefined;
  UpdateExpression?: string | undefined;
  ExpressionAttributeNames?: Record<string, string> | undefined;
  ExpressionAttributeValues?: Record<string, AttributeValue> | undefined;
}

type Stamps = { attributeFor(table: string | undefined): string | undefined; value: AttributeValue };

/** The middleware as a Pluggable: `client.middlewareStack.use(lastWriteStampMiddleware({...}))`. */
export function lastWriteStampMiddleware(
  options: LastWriteStampOptions,
): Pluggable<ServiceInputTypes, ServiceOutputTypes> {
  const { tables, now, resolution, expiryIndex } = checkOptions(options);
  const middleware: InitializeMiddleware<ServiceInputTypes, ServiceOutputTypes> =
    (next, context) => async (args) => {
      const nowMs = now();
      const stamps: Stamps = {
        attributeFor: (table) => attributeFor(tables, table),
        value: stampValue(nowMs, resolution),
      };
      const command = context.commandName ?? '';
      const stamped = stampRequest(command, args.input, stamps);
      // The derived expiry counts from the very instant the last-write stamp carries.
      const lastWriteMs = resolution === 'seconds' ? Math.floor(nowMs / 1000) * 1000 : Math.floor(nowMs);
      const input =
        Object.keys(expiryIndex).length === 0
          ? stamped
          : stampExpiryIndex(command, stamped, expiryIndex, lastWriteMs);
      return next(input === args.input ? args : { ...args, input });
    };
  return {
    applyToStack(stack) {
      // Initialize runs once per send, before retries: every attempt carries the same stamp.
      stack.add(middleware, { step: 'initialize', name: LAST_WRITE_STAMP_MIDDLEWARE, override: true });
    },
  };
}

/** Adds the middleware to a client; adding it again replaces the previous options. */
export function addLastWriteStamp(client: DynamoDBClient, options: LastWriteStampOptions): void {
  client.middlewareStack.use(lastWriteStampMiddleware(options));
}

/** The `tables` option for every cosmos-mode table among `settingsByTable`. */
export function lastWriteStampTables(
  settingsByTable: Record<string, TableTtlSettings>,
): LastWriteStampOptions['tables'] {
  const tables: LastWriteStampOptions['tables'] = {};
  for (const [table, settings] of Object.entries(settingsByTable)) {
    if (settings.policy.mode === 'cosmos')
      tables[table] = { lastWriteAttribute: settings.policy.lastWriteAttribute };
  }
  return tables;
}

/**
 * The request with every write to a configured table stamped; the caller's objects are never
 * modified (they may be reused for a retry). Exported for tests of the rewrite itself.
 */
export function stampRequest<T extends object>(commandName: string, input: T, stamps: Stamps): T {
  switch (commandName) {
    case 'PutItemCommand':
      return stampPut(input as PutItemCommandInput, stamps) as T;
    case 'UpdateItemCommand':
      return stampUpdateItem(input as UpdateItemCommandInput, stamps) as T;
    case 'BatchWriteItemCommand':
      return stampBatchWrite(input as BatchWriteItemCommandInput, stamps) as T;
    case 'TransactWriteItemsCommand':
      return stampTransactWrite(input as TransactWriteItemsCommandInput, stamps) as T;
    case 'ExecuteStatementCommand':
    case 'BatchExecuteStatementCommand':
    case 'ExecuteTransactionCommand':
      rejectUnstampableStatements(commandName, input, stamps);
      return input;
    case 'StartBulkPutItemsCommand': {
      const table = (input as { TableName?: string }).TableName;
      if (stamps.attributeFor(table) !== undefined) {
        throw new ValidationError(
          `StartBulkPutItems into ${table} cannot carry the last-write stamp; write through PutItem or BatchWriteItem`,
        );
      }
      return input;
    }
    default:
      return input;
  }
}

// Put replaces the whole item, so the stamp always wins over a copied-in value: a read-modify-write
// that carried the old stamp would otherwise not reset the TTL.
function stampPut<
  T extends { TableName?: string | undefined; Item?: Record<string, AttributeValue> | undefined },
>(put: T, stamps: Stamps): T {
  const attribute = stamps.attributeFor(put.TableName);
  if (attribute === undefined || put.Item === undefined) return put;
  return { ...put, Item: { ...put.Item, [attribute]: stamps.value } };
}

function stampUpdateItem(update: UpdateItemCommandInput, stamps: Stamps): UpdateItemCommandInput {
  const attribute = stamps.attributeFor(update.TableName);
  if (attribute === undefined) return update;
  if (update.UpdateExpression === undefined && update.AttributeUpdates !== undefined) {
    // Legacy AttributeUpdates cannot be mixed with an UpdateExpression: stamp in the same style.
    rejectOwnStamp(update.TableName, attribute, Object.keys(update.AttributeUpdates).includes(attribute));
    const stamp: AttributeValueUpdate = { Action: 'PUT', Value: stamps.value };
    return { ...update, AttributeUpdates: { ...update.AttributeUpdates, [attribute]: stamp } };
  }
  return stampUpdateExpression(update, attribute, stamps.value);
}

function stampUpdateExpression<T extends ExpressionUpdate>(
  update: T,
  attribute: string,
  value: AttributeValue,
): T {
  const names = update.ExpressionAttributeNames ?? {};
  const values = update.ExpressionAttributeValues ?? {};
  const written =
    update.UpdateExpression === undefined ? [] : topLevelAttributes(update.UpdateExpression, names);
  // Two writes of one path in one expression are an error at the server; a write of the stamp by the
  // application is refused here, with a message that says why.
  rejectOwnStamp(update.TableName, attribute, written.includes(attribute));
  const name = freePlaceholder('#ttlstreamLastWrite', names);
  const placeholder = freePlaceholder(':ttlstreamLastWrite', values);
  return {
    ...update,
    UpdateExpression: addSetAssignment(update.UpdateExpression, `${name} = ${placeholder}`),
    ExpressionAttributeNames: { ...names, [name]: attribute },
    ExpressionAttributeValues: { ...values, [placeholder]: value },
  };
}

function stampBatchWrite(batch: BatchWriteItemCommandInput, stamps: Stamps): BatchWriteItemCommandInput {
  if (batch.RequestItems === undefined) return batch;
  const requestItems: Record<string, WriteRequest[]> = {};
  for (const [table, requests] of Object.entries(batch.RequestItems)) {
    const attribute = stamps.attributeFor(table);
    requestItems[table] =
      attribute === undefined
        ? requests
        : requests.map((request) =>
            request.PutRequest?.Item === undefined
              ? request
              : {
                  ...request,
                  PutRequest: {
                    ...request.PutRequest,
                    Item: { ...request.PutRequest.Item, [attribute]: stamps.value },
                  },
                },
          );
  }
  return { ...batch, RequestItems: requestItems };
}

function stampTransactWrite(
  transact: TransactWriteItemsCommandInput,
  stamps: Stamps,
): TransactWriteItemsCommandInput {
  if (transact.TransactItems === undefined) return transact;
  const items = transact.TransactItems.map((item): TransactWriteItem => {
    if (item.Put) return { ...item, Put: stampPut(item.Put, stamps) };
    if (item.Update) {
      const attribute = stamps.attributeFor(item.Update.TableName);
      if (attribute !== undefined)
        return { ...item, Update: stampUpdateExpression(item.Update, attribute, stamps.value) };
    }
    return item;
  });
  return { ...transact, TransactItems: items };
}

// PartiQL INSERT and UPDATE cannot be stamped without parsing PartiQL. Letting them through would let
// an update keep the old stamp, so a pending delete of the item would still succeed: refuse instead.
const PARTIQL_WRITE = /^\s*(?:INSERT\s+INTO|UPDATE)\s+(?:"((?:[^"]|"")+)"|([A-Za-z0-9_.-]+))/i;

function rejectUnstampableStatements(commandName: string, input: object, stamps: Stamps): void {
  const record = input as {
    Statement?: string;
    Statements?: Array<{ Statement?: string }>;
    TransactStatements?: Array<{ Statement?: string }>;
  };
  const statements = [
    record.Statement,
    ...(record.Statements ?? []),
    ...(record.TransactStatements ?? []),
  ].map((s) => (typeof s === 'string' ? s : s?.Statement));
  for (const statement of statements) {
    const match = statement === undefined ? null : PARTIQL_WRITE.exec(statement);
    if (!match) continue;
    const table = match[1] !== undefined ? match[1].replace(/""/g, '"') : match[2];
    if (stamps.attributeFor(table) !== undefined) {
      throw new ValidationError(
        `${commandName}: PartiQL INSERT/UPDATE on ${table} cannot carry the last-write stamp; ` +
          'use PutItem, UpdateItem, BatchWriteItem or TransactWriteItems for this table',
      );
    }
  }
}

function rejectOwnStamp(table: string | undefined, attribute: string, written: boolean): void {
  if (!written) return;
  throw new ValidationError(
    `UpdateItem on ${table ?? '(no table)'} names ${attribute}, which the last-write stamp owns; ` +
      'remove it from the update (the stamp is added to every write)',
  );
}

function freePlaceholder(base: string, taken: Record<string, unknown>): string {
  let candidate = base;
  for (let i = 2; candidate in taken; i++) candidate = `${base}${i}`;
  return candidate;
}

function attributeFor(
  tables: Record<string, { lastWriteAttribute: string }>,
  table: string | undefined,
): string | undefined {
  if (table === undefined) return undefined;
  // TableName may be an ARN: arn:aws:dynamodb:region:account:table/NAME
  const name = /:table\/([^/]+)$/.exec(table)?.[1] ?? table;
  return Object.prototype.hasOwnProperty.call(tables, name) ? tables[name]?.lastWriteAttribute : undefined;
}

function stampValue(nowMs: number, resolution: 'seconds' | 'milliseconds'): AttributeValue {
  if (!Number.isFinite(nowMs)) throw new ValidationError(`the last-write clock returned ${String(nowMs)}`);
  const ms = Math.floor(nowMs);
  if (resolution === 'seconds') return { N: String(Math.floor(ms / 1000)) };
  const seconds = Math.floor(ms / 1000);
  return { N: `${seconds}.${String(ms - seconds * 1000).padStart(3, '0')}` };
}

function checkOptions(options: LastWriteStampOptions): Required<LastWriteStampOptions> {
  const expiryIndex = options?.expiryIndex ?? {};
  for (const [table, entry] of Object.entries(expiryIndex)) {
    if (
      !Number.isInteger(entry?.shards) ||
      entry.shards < 1 ||
      !Array.isArray(entry.keyAttributes) ||
      entry.keyAttributes.length === 0
    )
      throw new ConfigError(
        `lastWriteStampMiddleware: expiryIndex.${table} needs shards (a positive integer) and keyAttributes`,
      );
  }
  if (
    typeof options !== 'object' ||
    options === null ||
    typeof options.tables !== 'object' ||
    options.tables === null
  ) {
    throw new ConfigError(
      'lastWriteStampMiddleware: options.tables is required (table name → { lastWriteAttribute })',
    );
  }
  const tables: Record<string, { lastWriteAttribute: string }> = {};
  for (const [table, entry] of Object.entries(options.tables)) {
    const attribute = (entry as { lastWriteAttribute?: unknown } | undefined)?.lastWriteAttribute;
    if (typeof attribute !== 'string' || attribute === '') {
      throw new ConfigError(
        `lastWriteStampMiddleware: tables.${table}.lastWriteAttribute must be a non-empty string`,
      );
    }
    tables[table] = { lastWriteAttribute: attribute };
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new ConfigError(
      'lastWriteStampMiddleware: options.now must be a function returning epoch milliseconds',
    );
  }
  const resolution = options.resolution ?? 'seconds';
  if (resolution !== 'seconds' && resolution !== 'milliseconds') {
    throw new ConfigError(`lastWriteStampMiddleware: options.resolution must be 'seconds' or 'milliseconds'`);
  }
  return { tables, now: options.now ?? Date.now, resolution, expiryIndex };
}
