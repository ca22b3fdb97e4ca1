import type {
  AttributeValue,
  AttributeValueUpdate,
  BatchWriteItemCommandInput,
  PutItemCommandInput,
  TransactWriteItem,
  TransactWriteItemsCommandInput,
  UpdateItemCommandInput,
  WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../core/errors';
import {
  EXPIRY_DERIVED_ATTRIBUTE,
  EXPIRY_SHARD_ATTRIBUTE,
  cosmosExpiryMs,
  expiryShardOf,
  secondsText,
} from './expiry-index';
import type { TableTtlSettings } from './settings';
import type { Item } from './types';
import { addSetAssignment, topLevelAttributes } from './update-expression';

/** What the write stamp needs to put a table's items into its expiry index. */
export interface ExpiryStampTable {
  shards: number;
  /** The table's key attribute names (hash, then range): the shard is derived from them. */
  keyAttributes: string[];
  /** cosmos mode: the derived expiry is last write + effective ttl. */
  cosmos?: { ttlAttribute: string; defaultTtl: number | null };
}

/**
 * A cosmos item ttl absent on an update under a default of -1 ("never") still has to produce a number in the
 * update's arithmetic: 4e9 s (about 127 years, beyond Cosmos's largest ttl) keeps it out of every query until then,
 * and `evaluate` says "never" anyway.
 */
const NEVER_SECONDS = '4000000000';

/** The `expiryIndex` option of the write stamp for every opted-in table among `settingsByTable`. */
export function expiryStampTables(
  settingsByTable: Record<string, TableTtlSettings>,
  keyAttributesByTable: Record<string, string[]>,
): Record<string, ExpiryStampTable> {
  const out: Record<string, ExpiryStampTable> = {};
  for (const [table, settings] of Object.entries(settingsByTable)) {
    const keys = keyAttributesByTable[table];
    if (!settings.expiryIndex || !keys) continue;
    const policy = settings.policy;
    out[table] = {
      shards: settings.expiryIndex.shards,
      keyAttributes: keys,
      ...(policy.mode === 'cosmos'
        ? { cosmos: { ttlAttribute: policy.ttlAttribute, defaultTtl: policy.defaultTtl } }
        : {}),
    };
  }
  return out;
}

/**
 * Stamps the shard attribute (and, in cosmos mode, the derived expiry) on every write to an opted-in table.
 * `lastWriteMs` is the instant the last-write stamp carries (cosmos). The caller's objects are never modified.
 */
export function stampExpiryIndex<T extends object>(
  commandName: string,
  input: T,
  tables: Record<string, ExpiryStampTable>,
  lastWriteMs: number,
): T {
  const lookup = (table: string | undefined): ExpiryStampTable | undefined => {
    if (table === undefined) return undefined;
    const name = /:table\/([^/]+)$/.exec(table)?.[1] ?? table;
    return Object.prototype.hasOwnProperty.call(tables, name) ? tables[name] : undefined;
  };
  switch (commandName) {
    case 'PutItemCommand':
      return stampPut(input as PutItemCommandInput, lookup, lastWriteMs) as T;
    case 'UpdateItemCommand':
      return stampUpdate(input as UpdateItemCommandInput, lookup, lastWriteMs) as T;
    case 'BatchWriteItemCommand': {
      const batch = input as BatchWriteItemCommandInput;
      if (batch.RequestItems === undefined) return input;
      const requestItems: Record<string, WriteRequest[]> = {};
      for (const [table, requests] of Object.entries(batch.RequestItems)) {
        const t = lookup(table);
        requestItems[table] = !t
          ? requests
          : requests.map((r) =>
              r.PutRequest?.Item === undefined
                ? r
                : {
                    ...r,
                    PutRequest: { ...r.PutRequest, Item: stampItem(r.PutRequest.Item, t, lastWriteMs) },
                  },
            );
      }
      return { ...batch, RequestItems: requestItems } as T;
    }
    case 'TransactWriteItemsCommand': {
      const transact = input as TransactWriteItemsCommandInput;
      if (transact.TransactItems === undefined) return input;
      const items = transact.TransactItems.map((item): TransactWriteItem => {
        if (item.Put) return { ...item, Put: stampPut(item.Put, lookup, lastWriteMs) };
        if (item.Update) {
          const t = lookup(item.Update.TableName);
          if (t) return { ...item, Update: stampExpression(item.Update, t, lastWriteMs) };
        }
        return item;
      });
      return { ...transact, TransactItems: items } as T;
    }
    default:
      return input;
  }
}

function stampPut<T extends { TableName?: string | undefined; Item?: Item | undefined }>(
  put: T,
  lookup: (table: string | undefined) => ExpiryStampTable | undefined,
  lastWriteMs: number,
): T {
  const t = lookup(put.TableName);
  if (!t || put.Item === undefined) return put;
  return { ...put, Item: stampItem(put.Item, t, lastWriteMs) };
}

/** A whole item (Put): its shard from its key, and in cosmos mode its derived expiry (or none: out of the index). */
function stampItem(item: Item, t: ExpiryStampTable, lastWriteMs: number): Item {
  const out: Item = { ...item };
  const shard = shardFor(item, t);
  if (shard !== undefined) out[EXPIRY_SHARD_ATTRIBUTE] = shard;
  if (t.cosmos) {
    const at = cosmosExpiryMs(t.cosmos.defaultTtl, item[t.cosmos.ttlAttribute], lastWriteMs);
    if (at === undefined) delete out[EXPIRY_DERIVED_ATTRIBUTE];
    else out[EXPIRY_DERIVED_ATTRIBUTE] = { N: secondsText(at) };
  }
  return out;
}

function shardFor(item: Item, t: ExpiryStampTable): AttributeValue | undefined {
  const key: Item = {};
  for (const name of t.keyAttributes) {
    const value = item[name];
    // An incomplete key is the server's to refuse; nothing to stamp.
    if (value === undefined) return undefined;
    key[name] = value;
  }
  return { N: String(expiryShardOf(key, t.shards)) };
}

function stampUpdate(
  update: UpdateItemCommandInput,
  lookup: (table: string | undefined) => ExpiryStampTable | undefined,
  lastWriteMs: number,
): UpdateItemCommandInput {
  const t = lookup(update.TableName);
  if (!t) return update;
  if (update.UpdateExpression === undefined && update.AttributeUpdates !== undefined) {
    // Legacy AttributeUpdates cannot express the derived sum; cosmos tables need an UpdateExpression.
    if (t.cosmos)
      throw new ValidationError(
        `UpdateItem on ${update.TableName}: legacy AttributeUpdates cannot keep the expiry index; use an UpdateExpression`,
      );
    const shard = update.Key ? shardFor(update.Key, t) : undefined;
    if (!shard) return update;
    const action: AttributeValueUpdate = { Action: 'PUT', Value: shard };
    return { ...update, AttributeUpdates: { ...update.AttributeUpdates, [EXPIRY_SHARD_ATTRIBUTE]: action } };
  }
  return stampExpression(update, t, lastWriteMs);
}

interface ExpressionUpdate {
  TableName?: string | undefined;
  Key?: Item | undefined;
  UpdateExpression?: string | undefined;
  ExpressionAttributeNames?: Record<string, string> | undefined;
  ExpressionAttributeValues?: Record<string, AttributeValue> | undefined;
}

function stampExpression<T extends ExpressionUpdate>(
  update: T,
  t: ExpressionUpdateTable,
  lastWriteMs: number,
): T {
  const names = { ...(update.ExpressionAttributeNames ?? {}) };
  const values = { ...(update.ExpressionAttributeValues ?? {}) };
  const expression = update.UpdateExpression;
  const written = expression === undefined ? [] : topLevelAttributes(expression, names);
  for (const own of [EXPIRY_SHARD_ATTRIBUTE, EXPIRY_DERIVED_ATTRIBUTE]) {
    if (written.includes(own))
      throw new ValidationError(
        `UpdateItem on ${update.TableName ?? '(no table)'} names ${own}, which the expiry-index stamp owns; remove it`,
      );
  }
  let next = expression;
  const shard = update.Key ? shardFor(update.Key, t) : undefined;
  if (shard) {
    const n = free('#ttlstreamShard', names);
    const v = free(':ttlstreamShard', values);
    names[n] = EXPIRY_SHARD_ATTRIBUTE;
    values[v] = shard;
    next = addSetAssignment(next, `${n} = ${v}`);
  }
  if (t.cosmos) next = stampDerived(next, written, names, values, t.cosmos, lastWriteMs, update.TableName);
  return {
    ...update,
    UpdateExpression: next,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

type ExpressionUpdateTable = ExpiryStampTable;

/**
 * cosmos: the derived expiry after an update. The ttl the item will have is known when the update sets it to a
 * placeholder or removes it; when the update leaves it alone, the stored ttl (or the default when it has none) is
 * added to the new last write by the server: `if_not_exists(#ttl, :default) + :lastWrite`.
 */
function stampDerived(
  expression: string | undefined,
  written: string[],
  names: Record<string, string>,
  values: Record<string, AttributeValue>,
  cosmos: NonNullable<ExpiryStampTable['cosmos']>,
  lastWriteMs: number,
  table: string | undefined,
): string | undefined {
  if (cosmos.defaultTtl === null) return expression;
  // Every placeholder added is used: DynamoDB refuses unused ExpressionAttributeNames.
  const d = free('#ttlstreamExpires', names);
  names[d] = EXPIRY_DERIVED_ATTRIBUTE;
  if (!written.includes(cosmos.ttlAttribute)) {
    const ttl = free('#ttlstreamTtl', names);
    const dflt = free(':ttlstreamDefaultTtl', values);
    const lw = free(':ttlstreamLastWriteSeconds', values);
    names[ttl] = cosmos.ttlAttribute;
    values[dflt] = { N: cosmos.defaultTtl === -1 ? NEVER_SECONDS : String(cosmos.defaultTtl) };
    values[lw] = { N: secondsText(lastWriteMs) };
    return addSetAssignment(expression, `${d} = if_not_exists(${ttl}, ${dflt}) + ${lw}`);
  }
  const newTtl = assignedTtl(expression ?? '', names, values, cosmos.ttlAttribute);
  if (newTtl === 'unknown')
    throw new ValidationError(
      `UpdateItem on ${table ?? '(no table)'}: ${cosmos.ttlAttribute} must be SET to a :value or REMOVEd so the expiry index can follow it`,
    );
  const at = cosmosExpiryMs(cosmos.defaultTtl, newTtl, lastWriteMs);
  if (at === undefined) return addClause(expression, 'REMOVE', d);
  const v = free(':ttlstreamExpires', values);
  values[v] = { N: secondsText(at) };
  return addSetAssignment(expression, `${d} = ${v}`);
}

/** The ttl an update leaves: a SET to one placeholder, undefined for a REMOVE, 'unknown' for anything else. */
function assignedTtl(
  expression: string,
  names: Record<string, string>,
  values: Record<string, AttributeValue>,
  ttlAttribute: string,
): AttributeValue | undefined | 'unknown' {
  const tokens = [ttlAttribute, ...Object.keys(names).filter((n) => names[n] === ttlAttribute)];
  for (const token of tokens) {
    const escaped = token.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const set = new RegExp(
      `(?:^|[\\s,])${escaped}\\s*=\\s*(:[A-Za-z0-9_]+)\\s*(?:,|$|\\s+(?:REMOVE|ADD|DELETE)\\b)`,
      'i',
    ).exec(expression);
    if (set?.[1] !== undefined) return values[set[1]] ?? 'unknown';
    const removed = new RegExp(
      `\\bREMOVE\\b[^]*?(?:^|[\\s,])${escaped}(?:\\s*,|\\s*$|\\s+(?:SET|ADD|DELETE)\\b)`,
      'i',
    );
    if (removed.test(expression)) return undefined;
  }
  return 'unknown';
}

function addClause(expression: string | undefined, keyword: 'REMOVE', path: string): string {
  const trimmed = (expression ?? '').trim();
  const match = new RegExp(`(^|[\\s)])(${keyword})(?=\\s)`, 'i').exec(trimmed);
  if (!match) return trimmed === '' ? `${keyword} ${path}` : `${trimmed} ${keyword} ${path}`;
  const after = match.index + (match[1] ?? '').length + keyword.length;
  return `${trimmed.slice(0, after)} ${path},${trimmed.slice(after)}`;
}

function free(base: string, taken: Record<string, unknown>): string {
  let candidate = base;
  for (let i = 2; candidate in taken; i++) candidate = `${base}${i}`;
  return candidate;
}
