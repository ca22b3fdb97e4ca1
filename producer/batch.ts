import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { TtlstreamConfig } from '../core/config';
import { crashPoint } from '../core/crash-points';
import type { LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics, tableLabel } from '../core/metrics';
import { withRetry } from '../core/retry';
import { evaluate, isExpired } from '../policy';
import { stillExpiredCondition } from '../policy';
import type { TableTtlSettings } from '../policy/settings';
import type { Item } from '../policy/types';
import type { Retraction } from '../schemas';
import { batchGetAll, batchWriteAll, dynamoRetry } from './ddb-batch';
import type { EnabledTables } from './enabled-tables';
import { judgeDeletes, mayDelete, type GuardLimits, type GuardRecord, type GuardStore } from './guard';
import {
  SequenceGenerator,
  canonicalItem,
  eventIdFor,
  hashOfCanonical,
  sizeBytes,
  type DecisionBasis,
} from './image';
import {
  BatchJournal,
  deleteJournalRows,
  deleteRows,
  newBatchId,
  type Correction,
  type Intent,
  type Recovered,
} from './journal';
import { markRows, rowKey, type Mark, type MarkAddress } from './marks';
import { buildRemoveRecord, type Outgoing, type Prepared, type Publisher } from './publisher';
import { reconcile, type ReconcileDecision } from './reconcile';
import type { Semaphore } from './semaphore';
import { InternalError } from '../core/errors';

/**
 * One batch of one leased shard: steps 1–7 of the deletion protocol (docs/decisions/0001-deletion-protocol.md).
 * Every state change is one journal write for the whole batch (./journal.ts); the conditional DeleteItem itself
 * (and the rare GetItem after a failed condition) is the only per-item request besides the batched reads.
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
  /**
   * Items whose deletion is journaled but not finished (a delete failed, the table was paused): the journal carries
   * them to the next sweep's recovery, and until then the shard worker leaves their marks alone.
   */
  pending: string[];
}

/** What one batch works on: marks read from the shard, and (at the start of a sweep) the journal's leftovers. */
export interface BatchInput {
  shard: number;
  marks: readonly Mark[];
  recovered?: Recovered;
  /** Items the journal carries to the next sweep: their marks are left as they are until then. */
  skip?: ReadonlySet<string>;
}

interface Entry {
  address: MarkAddress;
  /** The item's marks in this batch (a re-mark can put one item in two rows). */
  marks: Mark[];
  intent?: Intent;
  item?: Item;
  /** canonicalItem(item) and its hash, computed once (eventID, SizeBytes and the delete's image check use them). */
  itemCanonical?: string;
  itemHash?: string;
  settings?: TableTtlSettings;
  decision?: ReconcileDecision;
  /** The deletion this batch carries out (new or resumed). */
  deletion?: Intent & { image: Item };
  /** The item's intent as the journal must record it at the end of the batch. */
  journal?: Intent;
  /** Set by the delete when the deleted image differed from the published one. */
  correction?: Correction;
  /**
   * This batch retracted the item's deletion: `journal` holds it as RETRACTED in every later version of this batch,
   * so that no older journal row can bring the retracted deletion back to be resumed (0009).
   */
  tombstone?: boolean;
  /** Rows to delete at the end. */
  done: boolean;
}

/** A marked item that expires within this much is kept marked rather than dropped (see step 2). */
const NEAR_EXPIRY_KEEP_MS = 60_000;

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

function group(input: BatchInput): Entry[] {
  const bySk = new Map<string, Entry>();
  for (const intent of input.recovered?.intents.values() ?? []) {
    bySk.set(intent.address.sk, { address: intent.address, marks: [], intent, journal: intent, done: false });
  }
  for (const mark of input.marks) {
    const e = bySk.get(mark.address.sk) ?? { address: mark.address, marks: [], done: false };
    e.marks.push(mark);
    bySk.set(mark.address.sk, e);
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
  input: BatchInput,
  lease: LeaseHandle,
): Promise<BatchStats> {
  const stats: BatchStats = { acted: 0, deleted: 0, retracted: 0, left: 0, pending: [] };
  const entries = group(input);
  if (entries.length === 0) {
    // Only rows of a first journal version cut short by a crash: nothing of that batch was published.
    await deleteRows(ctx.ddb, ctx.config.tables.marks, input.recovered?.rowKeys ?? []);
    return stats;
  }
  const log = ctx.logger;
  const limits: GuardLimits = ctx.config.guard;
  const journal = new BatchJournal(ctx.ddb, ctx.config.tables.marks, input.shard, newBatchId(ctx.now()));

  // A correction witnessed before a crash goes out first, whatever the table's state now: the deletion happened,
  // and its effective record must carry the image actually deleted.
  const corrections: Outgoing[] = [];
  for (const e of ctx.config.producer.dryRun ? [] : entries) {
    const c = e.intent?.correction;
    if (!c) continue;
    corrections.push(...correctionOf(ctx, e, e.intent as Intent, c));
    const settled: Intent = { ...(e.intent as Intent) };
    delete settled.correction;
    e.intent = settled;
    e.journal = settled;
  }
  if (corrections.length > 0) {
    lease.assertValid();
    await (ctx.publisher as Publisher).publish(corrections);
    stats.retracted += corrections.length / 2;
    stats.acted += corrections.length;
  }

  // Which tables may be acted on: ENABLED now, and not paused by the guard (read fresh for every batch).
  const enabled = await ctx.tables.get();
  const tableNames = [...new Set(entries.map((e) => e.address.table))];
  const guards = await ctx.guard.getMany(tableNames.filter((t) => enabled.has(t)));
  const active = (t: string): boolean => enabled.has(t) && mayDelete((guards.get(t) as GuardRecord).state);
  // An item the journal carries to the next sweep (no intent in this batch: it is not a recovery) waits for it.
  const waiting = (e: Entry): boolean => !e.intent && (input.skip?.has(e.address.sk) ?? false);
  const live = entries.filter((e) => active(e.address.table) && !waiting(e));
  for (const e of live) e.settings = enabled.get(e.address.table);
  stats.left += entries.length - live.length;

  // Step 1.
  await readItems(ctx, live);

  // Step 2: decide.
  const now = ctx.now();
  for (const e of live) {
    const settings = e.settings as TableTtlSettings;
    if (e.item) {
      e.itemCanonical = canonicalItem(e.item);
      e.itemHash = hashOfCanonical(e.itemCanonical);
    }
    const verdict = e.item ? evaluate(settings, e.item, now) : undefined;
    const current = verdict ? { imageHash: e.itemHash as string, expired: isExpired(verdict) } : undefined;
    e.decision = reconcile({
      active: true,
      ...(e.intent ? { intent: { state: e.intent.state, imageHash: e.intent.imageHash } } : {}),
      ...(current ? { item: current } : {}),
    });
    // Marked as expired by a scanner, not quite expired here (its clock is a little ahead of ours): keep the mark
    // for the next sweep rather than drop it, since the scanner does not mark the same expiry again for a while.
    if (
      e.decision.next === 'drop' &&
      e.decision.reason === 'not-expired' &&
      verdict?.kind === 'expires' &&
      verdict.expiresAtMs - now <= NEAR_EXPIRY_KEEP_MS
    ) {
      e.decision = { retract: false, next: 'leave', reason: 'expires-soon' };
    }
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

  // The journal of this batch: its deletions (step 3) and the deletions it retracted.
  const journaledEntries = new Set<Entry>();
  const journaled = (): Intent[] => [...journaledEntries].map((e) => e.journal as Intent);
  const tombstone = (e: Entry, intent: Intent, reason: string): void => {
    e.journal = { ...intent, state: 'RETRACTED', retractReason: reason };
    e.tombstone = true;
    journaledEntries.add(e);
  };

  // Step 2's retractions go out before the journal records a new deletion of the same item, and each is journaled
  // RETRACTED before it goes out: a crash after the RETRACT must not let a recovery resume the deletion and publish
  // its eventID again (REMOVE, RETRACT, REMOVE under one eventID reads as retracted to every consumer). A deletion
  // an earlier batch journaled RETRACTED is retracted again: that batch may have died before the acknowledgement.
  const early: Outgoing[] = [];
  for (const e of work) {
    if (!e.decision?.retract || !e.intent) continue;
    const reason =
      e.intent.state === 'RETRACTED' ? (e.intent.retractReason ?? e.decision.reason) : e.decision.reason;
    if (e.intent.state !== 'RETRACTED') tombstone(e, e.intent, reason);
    early.push(retraction(e, e.intent.eventID, reason, now));
  }
  if (early.length > 0) {
    lease.assertValid();
    if (journaledEntries.size > 0) {
      await journal.write(journaled());
      crashPoint('producer.after-retracted-state');
    }
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
  for (const e of work.filter(deleting)) {
    const d = e.decision as ReconcileDecision;
    const image = e.item as Item;
    const decided = d.next === 'delete' ? basisOf(e) : undefined;
    const intent: Intent = decided
      ? {
          address: e.address,
          ...(decided.markRow !== undefined ? { markRow: decided.markRow } : {}),
          eventID: eventIdFor(e.address.table, e.address.keys, image, decided.basis, e.itemCanonical),
          imageHash: e.itemHash as string,
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
    e.journal = intent;
    e.tombstone = false; // a new deletion of the item replaces the retracted one in this batch's journal
    journaledEntries.add(e);
    toDelete.push(e);
  }
  if (toDelete.some((e) => (e.decision as ReconcileDecision).next === 'delete')) {
    lease.assertValid();
    await journal.write(journaled());
    stats.acted += toDelete.length;
    crashPoint('producer.after-intent');
  }

  // Step 4: publish the REMOVE records of new and not-yet-published deletions.
  const toPublish = toDelete.filter((e) => prepared.has(e));
  if (toPublish.length > 0) {
    lease.assertValid();
    await (ctx.publisher as Publisher).publish(toPublish.map((e) => prepared.get(e) as Prepared));
    const lagByTable = new Map<string, number>();
    for (const e of toPublish) {
      const expiresAtMs = expiryOf(e, now);
      if (expiresAtMs !== undefined) {
        const lag = Math.max(0, ctx.now() - expiresAtMs) / 1000;
        metrics.expiryToRecordSeconds.observe({ table: e.address.table }, lag);
        lagByTable.set(e.address.table, Math.max(lag, lagByTable.get(e.address.table) ?? 0));
      }
    }
    for (const [table, lag] of lagByTable) metrics.deletionLag.set({ table: tableLabel(table) }, lag);
    stats.acted += toPublish.length;
    crashPoint('producer.after-publish');

    // Step 5.
    for (const e of toPublish) e.journal = { ...(e.journal as Intent), state: 'PUBLISHED' };
    await journal.write(journaled());
    crashPoint('producer.after-published-state');
  }

  // Step 6: the conditional deletes, bounded process-wide.
  const late: Outgoing[] = [];
  const deleted: Entry[] = [];
  let kept = 0;
  if (toDelete.length > 0) {
    lease.assertValid();
    let remaining = toDelete.length;
    await Promise.all(
      toDelete.map((e) =>
        ctx.deletes.run(async () => {
          const outcome = await deleteOne(ctx, e, now, late);
          remaining--;
          if (outcome === 'deleted' || outcome === 'deleted-by-peer') deleted.push(e);
          if (outcome === 'kept-by-condition') {
            tombstone(e, e.journal as Intent, 'condition-failed');
            kept++;
          }
          if (outcome === 'deleted') {
            stats.deleted++;
            if (remaining > 0) crashPoint('producer.after-delete');
          }
        }),
      ),
    );
    stats.acted += toDelete.length;
  }

  // Step 6b: witness the deletes at once, corrections included, so that neither a key re-created before the
  // clean-up is mistaken for a delete that failed (which would retract a real deletion's record), nor a crash
  // before the corrections are published loses them. See 0001, "DELETED". Deletions the condition kept are
  // journaled RETRACTED in the same write, before their RETRACTs go out (see step 2).
  if (deleted.length > 0 || kept > 0) {
    for (const e of deleted) {
      e.journal = {
        ...(e.journal as Intent),
        state: 'DELETED',
        ...(e.correction ? { correction: e.correction } : {}),
      };
    }
    await journal.write(journaled());
    crashPoint('producer.after-witness');
  }

  // Corrections and retractions from step 6, before the journal that would let us redo them disappears.
  if (late.length > 0) {
    await (ctx.publisher as Publisher).publish(late);
    stats.retracted += late.filter((m) => m.kind === 'retract').length;
    crashPoint('producer.after-retract');
  }

  // Step 7: the mark rows (deleted when all their marks are finished, else replaced by a row of the unfinished
  // ones), then the journal: what is not finished is carried in one last version.
  const rows = new Map<string, { shard: number; table: string; all: number; unfinished: Mark[] }>();
  for (const e of entries) {
    for (const m of e.marks) {
      const key = m.row ?? m.address.sk;
      const r = rows.get(key) ?? { shard: m.address.shard, table: m.address.table, all: 0, unfinished: [] };
      r.all++;
      if (!e.done) r.unfinished.push(m);
      rows.set(key, r);
    }
  }
  const changedRows = [...rows].filter(([, r]) => r.unfinished.length < r.all);
  const replacements = changedRows.flatMap(([, r]) =>
    r.unfinished.length > 0 ? markRows(r.table, r.unfinished, ctx.now()) : [],
  );
  const unfinished = entries.filter((e) => !e.done && e.journal).map((e) => e.journal as Intent);
  if (changedRows.length > 0) crashPoint('producer.before-cleanup');
  if (unfinished.length > 0) {
    // Never a correction among them: corrections belong to finished deletes, and recovered ones went out first.
    // This batch's retractions stay beside them until the older rows below are gone (a recovery retracts again).
    const retracted = entries.filter((e) => e.tombstone).map((e) => e.journal as Intent);
    await journal.write([...unfinished, ...retracted]);
    stats.pending = unfinished.map((i) => i.address.sk);
  }
  if (replacements.length > 0) {
    await batchWriteAll(
      ctx.ddb,
      ctx.config.tables.marks,
      replacements.map((Item) => ({ PutRequest: { Item } })),
    );
  }
  await deleteRows(
    ctx.ddb,
    ctx.config.tables.marks,
    changedRows.map(([sk, r]) => rowKey(r.shard, sk)),
  );
  // The last version just written stays when it carries unfinished items; every earlier one is superseded.
  const keep = new Set(unfinished.length > 0 ? journal.lastVersionKeys().map(keyId) : []);
  const obsolete = [
    ...(input.recovered?.rowKeys ?? []),
    ...journal.rowKeys().filter((k) => !keep.has(keyId(k))),
  ];
  await deleteJournalRows(ctx.ddb, ctx.config.tables.marks, obsolete);
  stats.acted += changedRows.length;
  return stats;
}

/**
 * What makes a new deletion decision distinct from every other about the same item (image.ts DecisionBasis): the
 * deletion the journal knows of for the item (retracted, or witnessed before the key was written again), else the
 * mark it was read from; of several marks of the item, the same one for every producer that reads them. Also the
 * mark row the decision's chain started on (Intent.markRow), which a recovery finishes with it.
 */
function basisOf(e: Entry): { basis: DecisionBasis; markRow?: string } {
  if (e.intent) {
    return {
      basis: { kind: 'after', eventID: e.intent.eventID },
      ...(e.intent.markRow !== undefined ? { markRow: e.intent.markRow } : {}),
    };
  }
  const first = e.marks
    .map((m) => ({ id: m.row ?? `${m.address.sk}@${m.markedAtMs}`, row: m.row ?? m.address.sk }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
  if (!first) throw new InternalError(`deletion of ${e.address.sk} decided without a mark or an intent`);
  return { basis: { kind: 'mark', row: first.id }, markRow: first.row };
}

function keyId(k: Record<string, AttributeValue>): string {
  return `${k.pk?.S ?? ''}|${k.sk?.S ?? ''}`;
}

/** RETRACT the published deletion and publish the image actually deleted under its own eventID. */
function correctionOf(ctx: BatchContext, e: Entry, intent: Intent, c: Correction): Outgoing[] {
  const corrected: Intent & { image: Item } = {
    ...intent,
    eventID: c.eventID,
    imageHash: c.imageHash,
    sequenceNumber: c.sequenceNumber,
    image: c.image,
  };
  return [
    retraction(e, intent.eventID, 'item-changed', ctx.now()),
    removeFor(ctx, { ...e, deletion: corrected }),
  ];
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
    sizeBytes: sizeBytes(keys, d.image, d.image === e.item ? e.itemCanonical : undefined),
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
    const oldCanonical = old ? canonicalItem(old) : undefined;
    // The published image's canonical form when this batch read it, else (a resumed intent) only its hash.
    const changed =
      oldCanonical !== undefined &&
      (d.image === e.item && e.itemCanonical !== undefined
        ? oldCanonical !== e.itemCanonical
        : hashOfCanonical(oldCanonical) !== d.imageHash);
    if (old && oldCanonical !== undefined && changed) {
      // Witnessed with the deletion (step 6b) before it is published, so a crash in between cannot lose it.
      e.correction = {
        eventID: eventIdFor(
          table,
          e.address.keys,
          old,
          { kind: 'corrects', eventID: d.eventID },
          oldCanonical,
        ),
        imageHash: hashOfCanonical(oldCanonical),
        sequenceNumber: ctx.sequences.next(ctx.now()),
        image: old,
      };
      late.push(...correctionOf(ctx, e, d, e.correction));
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
