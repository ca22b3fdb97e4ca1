import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { TtlstreamConfig } from '../core/config';
import { crashPoint } from '../core/crash-points';
import type { LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { withRetry } from '../core/retry';
import { evaluate, isExpired } from '../policy';
import { stillExpiredCondition } from '../policy';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import type { Retraction } from '../schemas';
import { batchGetAll, batchWriteAll, dynamoRetry } from './ddb-batch';
import type { EnabledTables } from './enabled-tables';
import { judgeDeletes, mayDelete, type GuardLimits, type GuardRecord, type GuardStore } from './guard';
import { SequenceGenerator, canonicalItem, eventIdFor, imageHash, sizeBytes } from './image';
import {
  intentSk,
  intentToItem,
  rowKey,
  type Intent,
  type Mark,
  type MarkAddress,
  type ShardRow,
} from './marks';
import { buildRemoveRecord, type Outgoing, type Prepared, type Publisher } from './publisher';
import { reconcile, type ReconcileDecision } from './reconcile';
import type { Semaphore } from './semaphore';

/**
 * One batch of one leased shard: steps 1–7 of the deletion protocol (docs/decisions/0001-deletion-protocol.md).
 * Every state change is batched except the conditional DeleteItem itself (and the rare GetItem after a failed
 * condition).
 */

export interface BatchContext {
  config: TtlstreamConfig;
  ddb: DynamoDBClient;
  /** Undefined in dry-run mode: nothing is ever published. */
  publisher?: Publisher;
  logger: Logger;
  tables: EnabledTables;
  guard: GuardStore;
  deletes: Semaphore;
  sequences: SequenceGenerator;
  now: () => number;
  /** What was already logged (dry-run verdicts, unpublishable items), so a row that stays is reported once. */
  reported: Set<string>;
}

export interface BatchStats {
  /** Rows changed or records published: the shard is not idle. */
  acted: number;
  deleted: number;
  retracted: number;
  left: number;
}

interface Entry {
  address: MarkAddress;
  mark?: Mark;
  intent?: Intent;
  item?: Item;
  /** imageHash(item), computed once. */
  itemHash?: string;
  settings?: TableTtlSettings;
  decision?: ReconcileDecision;
  /** The deletion this batch carries out (new or resumed). */
  deletion?: Intent & { image: Item };
  /** Rows to delete at the end. */
  done: boolean;
}

/** True the first time `id` is seen (bounded memory: forgets everything past 100k ids and starts over). */
function reportOnce(ctx: BatchContext, id: string): boolean {
  if (ctx.reported.has(id)) return false;
  if (ctx.reported.size >= 100_000) ctx.reported.clear();
  ctx.reported.add(id);
  return true;
}

function keyNames(keys: Item): string[] {
  return Object.keys(keys);
}

function pick(item: Item, names: readonly string[]): Item {
  const out: Item = {};
  for (const n of names) if (item[n] !== undefined) out[n] = item[n];
  return out;
}

function retraction(entry: Entry, eventID: string, reason: string, now: number): Outgoing {
  const r: Retraction = {
    eventName: 'RETRACT',
    retractsEventID: eventID,
    table: entry.address.table,
    Keys: entry.address.keys,
    reason,
    retractedAt: now,
  };
  return { kind: 'retract', table: entry.address.table, retraction: r };
}

function group(rows: readonly ShardRow[]): Entry[] {
  const bySk = new Map<string, Entry>();
  for (const row of rows) {
    const address = row.kind === 'mark' ? row.mark.address : row.intent.address;
    const e = bySk.get(address.sk) ?? { address, done: false };
    if (row.kind === 'mark') e.mark = row.mark;
    else e.intent = row.intent;
    bySk.set(address.sk, e);
  }
  return [...bySk.values()];
}

/** Step 1: read every marked item of the active tables with one consistent BatchGetItem per table. */
async function readItems(ctx: BatchContext, entries: Entry[]): Promise<void> {
  const byTable = new Map<string, Entry[]>();
  for (const e of entries) {
    const list = byTable.get(e.address.table) ?? [];
    list.push(e);
    byTable.set(e.address.table, list);
  }
  await Promise.all(
    [...byTable].map(async ([table, list]) => {
      const names = keyNames(list[0]?.address.keys ?? {});
      const found = await batchGetAll(
        ctx.ddb,
        table,
        list.map((e) => e.address.keys),
        { consistent: true },
      );
      const byKey = new Map(found.map((item) => [canonicalItem(pick(item, names)), item]));
      for (const e of list) {
        const item = byKey.get(canonicalItem(e.address.keys));
        if (item) e.item = item;
      }
    }),
  );
}

export async function processBatch(
  ctx: BatchContext,
  rows: readonly ShardRow[],
  lease: LeaseHandle,
): Promise<BatchStats> {
  const stats: BatchStats = { acted: 0, deleted: 0, retracted: 0, left: 0 };
  const entries = group(rows);
  if (entries.length === 0) return stats;
  const log = ctx.logger;
  const limits: GuardLimits = ctx.config.guard;

  // Which tables may be acted on: ENABLED now, and not paused by the guard (read fresh for every batch).
  const enabled = await ctx.tables.get();
  const tableNames = [...new Set(entries.map((e) => e.address.table))];
  const guards = await ctx.guard.getMany(tableNames.filter((t) => enabled.has(t)));
  const active = (t: string): boolean => enabled.has(t) && mayDelete((guards.get(t) as GuardRecord).state);
  const live = entries.filter((e) => active(e.address.table));
  for (const e of live) e.settings = enabled.get(e.address.table);
  stats.left += entries.length - live.length;

  // Step 1.
  await readItems(ctx, live);

  // Step 2: decide.
  const now = ctx.now();
  for (const e of live) {
    const settings = e.settings as TableTtlSettings;
    if (e.item) e.itemHash = imageHash(e.item);
    const current = e.item
      ? { imageHash: e.itemHash as string, expired: isExpired(evaluate(settings, e.item, now)) }
      : undefined;
    e.decision = reconcile({
      active: true,
      ...(e.intent ? { intent: { state: e.intent.state, imageHash: e.intent.imageHash } } : {}),
      ...(current ? { item: current } : {}),
    });
  }
  const deleting = (e: Entry): boolean =>
    e.decision !== undefined && ['delete', 'resume-publish', 'resume-delete'].includes(e.decision.next);

  if (ctx.config.producer.dryRun) {
    for (const e of live.filter(deleting)) {
      const id = `${e.address.sk}|${e.itemHash as string}`;
      if (!reportOnce(ctx, id)) continue;
      metrics.deletesSkipped.inc({ table: e.address.table, reason: 'dry-run' });
      log.info(
        { table: e.address.table, keys: e.address.keys, dryRun: true },
        'dry run: would delete expired item',
      );
    }
    stats.left += live.length;
    return stats;
  }

  // The deletion-rate guard, before anything is written: a table over its limit keeps all its marks.
  const plannedByTable = new Map<string, number>();
  for (const e of live.filter(deleting)) {
    plannedByTable.set(e.address.table, (plannedByTable.get(e.address.table) ?? 0) + 1);
  }
  const paused = new Set<string>();
  for (const [table, n] of plannedByTable) {
    const g = guards.get(table) as GuardRecord;
    // Counted while CONFIRMED too: the scanner re-arms the guard only once the rate is back under the limit.
    const verdict = judgeDeletes(g.state, await ctx.guard.countDeletes(table, n), limits);
    if (verdict.action !== 'pause') continue;
    if (await ctx.guard.pause(table, verdict.reason)) {
      metrics.guardPaused.set({ table }, 1);
      log.error(
        { table, reason: verdict.reason },
        'mass-deletion guard: table paused; confirm or cancel via the control plane',
      );
    }
    paused.add(table);
  }
  const work = live.filter((e) => !paused.has(e.address.table));
  stats.left += live.length - work.length;

  // Step 2's retractions go out before any intent row is overwritten by a new deletion of the same item.
  const early: Outgoing[] = [];
  for (const e of work) {
    if (e.decision?.retract && e.intent) early.push(retraction(e, e.intent.eventID, e.decision.reason, now));
  }
  if (early.length > 0) {
    lease.assertValid();
    await (ctx.publisher as Publisher).publish(early);
    stats.retracted += early.length;
    stats.acted += early.length;
    crashPoint('producer.after-retract');
  }
  for (const e of work) {
    const d = e.decision as ReconcileDecision;
    if (d.next === 'drop') {
      e.done = true;
      metrics.deletesSkipped.inc({ table: e.address.table, reason: d.reason });
    }
  }

  // Step 3: intents for new deletions; resumed ones keep theirs.
  const toDelete: Entry[] = [];
  const prepared = new Map<Entry, Prepared>();
  const newIntents: Intent[] = [];
  for (const e of work.filter(deleting)) {
    const d = e.decision as ReconcileDecision;
    const image = e.item as Item;
    const intent: Intent =
      d.next === 'delete'
        ? {
            address: e.address,
            eventID: eventIdFor(e.address.table, e.address.keys, image),
            imageHash: e.itemHash as string,
            image,
            sequenceNumber: ctx.sequences.next(now),
            decidedAtMs: now,
            state: 'INTENT',
          }
        : (e.intent as Intent);
    e.deletion = { ...intent, image };
    if (d.next !== 'resume-delete') {
      // Encode (and validate against the contract) before anything durable happens: an item whose record cannot
      // be published is not deleted, and does not hold up the rest of the shard.
      try {
        prepared.set(e, (ctx.publisher as Publisher).prepare(removeFor(ctx, e)));
      } catch (err) {
        const once = `unpublishable|${e.address.sk}|${e.itemHash as string}`;
        if (reportOnce(ctx, once)) {
          log.error(
            { table: e.address.table, keys: e.address.keys, err },
            'expired item not deleted: its REMOVE record cannot be encoded',
          );
        }
        metrics.deletesSkipped.inc({ table: e.address.table, reason: 'unpublishable' });
        e.deletion = undefined;
        stats.left++;
        continue;
      }
    }
    toDelete.push(e);
    if (d.next === 'delete') newIntents.push(intent);
  }
  if (newIntents.length > 0) {
    lease.assertValid();
    await batchWriteAll(
      ctx.ddb,
      ctx.config.tables.marks,
      newIntents.map((i) => ({ PutRequest: { Item: intentToItem(i) } })),
    );
    stats.acted += newIntents.length;
    crashPoint('producer.after-intent');
  }

  // Step 4: publish the REMOVE records of new and not-yet-published deletions.
  const toPublish = toDelete.filter((e) => prepared.has(e));
  if (toPublish.length > 0) {
    lease.assertValid();
    await (ctx.publisher as Publisher).publish(toPublish.map((e) => prepared.get(e) as Prepared));
    for (const e of toPublish) {
      const expiresAtMs = expiryOf(e, now);
      if (expiresAtMs !== undefined) {
        metrics.expiryToRecordSeconds.observe(
          { table: e.address.table },
          Math.max(0, ctx.now() - expiresAtMs) / 1000,
        );
      }
    }
    stats.acted += toPublish.length;
    crashPoint('producer.after-publish');

    // Step 5.
    await batchWriteAll(
      ctx.ddb,
      ctx.config.tables.marks,
      toPublish.map((e) => ({
        PutRequest: { Item: intentToItem({ ...(e.deletion as Intent), state: 'PUBLISHED' }) },
      })),
    );
    crashPoint('producer.after-published-state');
  }

  // Step 6: the conditional deletes, bounded process-wide.
  const late: Outgoing[] = [];
  const deleted: Entry[] = [];
  if (toDelete.length > 0) {
    lease.assertValid();
    let remaining = toDelete.length;
    await Promise.all(
      toDelete.map((e) =>
        ctx.deletes.run(async () => {
          const outcome = await deleteOne(ctx, e, now, late);
          remaining--;
          if (outcome === 'deleted' || outcome === 'deleted-by-peer') deleted.push(e);
          if (outcome === 'deleted') {
            stats.deleted++;
            if (remaining > 0) crashPoint('producer.after-delete');
          }
        }),
      ),
    );
    stats.acted += toDelete.length;
  }

  // Step 6b: witness the deletes at once, so a key re-created before the clean-up is not mistaken for a delete
  // that failed (which would retract a real deletion's record). See 0001, "DELETED".
  if (deleted.length > 0) {
    await batchWriteAll(
      ctx.ddb,
      ctx.config.tables.marks,
      deleted.map((e) => ({
        PutRequest: { Item: intentToItem({ ...(e.deletion as Intent), state: 'DELETED' }) },
      })),
    );
  }

  // Corrections and retractions from step 6, before the rows that would let us redo them disappear.
  if (late.length > 0) {
    await (ctx.publisher as Publisher).publish(late);
    stats.retracted += late.filter((m) => m.kind === 'retract').length;
    crashPoint('producer.after-retract');
  }

  // Step 7.
  const cleanup: WriteRequest[] = [];
  for (const e of work) {
    if (!e.done) continue;
    if (e.mark) cleanup.push({ DeleteRequest: { Key: rowKey(e.address.shard, e.address.sk) } });
    if (e.intent || e.deletion)
      cleanup.push({ DeleteRequest: { Key: rowKey(e.address.shard, intentSk(e.address.sk)) } });
  }
  if (cleanup.length > 0) {
    crashPoint('producer.before-cleanup');
    await batchWriteAll(ctx.ddb, ctx.config.tables.marks, cleanup);
    stats.acted += cleanup.length;
  }
  return stats;
}

function expiryOf(e: Entry, now: number): number | undefined {
  const v = evaluate(e.settings as TableTtlSettings, e.item as Item, now);
  return v.kind === 'expires' ? v.expiresAtMs : undefined;
}

function removeFor(ctx: BatchContext, e: Entry): Outgoing {
  const d = e.deletion as Intent & { image: Item };
  const keys = pick(d.image, keyNames(e.address.keys));
  const record = buildRemoveRecord(ctx.config, {
    table: e.address.table,
    keys,
    image: d.image,
    eventID: d.eventID,
    sequenceNumber: d.sequenceNumber,
    decidedAtMs: d.decidedAtMs,
    sizeBytes: sizeBytes(keys, d.image),
  });
  return { kind: 'remove', table: e.address.table, record };
}

type DeleteOutcome = 'deleted' | 'kept-by-condition' | 'deleted-by-peer' | 'failed';

/**
 * Step 6 for one item. On success the entry is done; when the server's old image differs from the published one
 * (an attribute the condition cannot pin changed in the window), the REMOVE is corrected: RETRACT it and publish
 * the image actually deleted under its own eventID.
 */
async function deleteOne(ctx: BatchContext, e: Entry, now: number, late: Outgoing[]): Promise<DeleteOutcome> {
  const d = e.deletion as Intent & { image: Item };
  const settings = e.settings as TableTtlSettings;
  const table = e.address.table;
  const cond = stillExpiredCondition(settings, d.image, now);
  try {
    const out = await withRetry(
      () =>
        ctx.ddb.send(
          new DeleteItemCommand({
            TableName: table,
            Key: e.address.keys,
            ConditionExpression: cond.expression,
            ExpressionAttributeNames: cond.names,
            ...(Object.keys(cond.values).length > 0 ? { ExpressionAttributeValues: cond.values } : {}),
            ReturnValues: 'ALL_OLD',
          }),
        ),
      dynamoRetry,
    );
    e.done = true;
    metrics.deletions.inc({ table });
    const old = out.Attributes;
    if (old && imageHash(old) !== d.imageHash) {
      const corrected: Intent & { image: Item } = {
        ...d,
        eventID: eventIdFor(table, e.address.keys, old),
        imageHash: imageHash(old),
        image: old,
        sequenceNumber: ctx.sequences.next(ctx.now()),
      };
      late.push(retraction(e, d.eventID, 'item-changed', ctx.now()));
      late.push(removeFor(ctx, { ...e, deletion: corrected }));
      ctx.logger.warn(
        { table, keys: e.address.keys },
        'deleted image differed from the published one; record corrected',
      );
    }
    return 'deleted';
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) {
      // The intent stays PUBLISHED: the next batch over this shard resumes the delete.
      ctx.logger.warn({ table, keys: e.address.keys, err }, 'conditional delete failed; will be retried');
      return 'failed';
    }
  }
  const now2 = await withRetry(
    () => ctx.ddb.send(new GetItemCommand({ TableName: table, Key: e.address.keys, ConsistentRead: true })),
    dynamoRetry,
  );
  e.done = true;
  if (!now2.Item) {
    // Gone: a peer acting on the same intent deleted it under the same eventID; the record stands.
    return 'deleted-by-peer';
  }
  late.push(retraction(e, d.eventID, 'condition-failed', ctx.now()));
  metrics.deletesSkipped.inc({ table, reason: 'condition-failed' });
  return 'kept-by-condition';
}
