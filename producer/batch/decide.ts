import { metrics } from '../../core/metrics';
import { evaluate, isExpired } from '../../policy';
import { batchGetAll } from '../../pipeline/ddb-batch';
import { canonicalItem, hashOfCanonical, keyIdentity, pick } from '../../pipeline/image';
import { reconcile, type ReconcileDecision } from '../reconcile';
import {
  deleting,
  keyNames,
  reportOnce,
  type BatchContext,
  type BatchInput,
  type BatchRun,
  type DecidedEntry,
  type Entry,
  type LiveEntry,
} from './state';

/** A marked item that expires within this much is kept marked rather than dropped (see step 2). */
const NEAR_EXPIRY_KEEP_MS = 60_000;

/** One entry per item: the journal's recovered intents, and the marks (a re-mark can put one item in two rows). */
export function group(input: BatchInput): Entry[] {
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

/**
 * Step 1: read every marked item of the active tables with one consistent BatchGetItem per table; an item found is
 * addressed from then on by the key attributes the read returned.
 */
export async function readItems(ctx: BatchContext, entries: LiveEntry[]): Promise<void> {
  const byTable = new Map<string, LiveEntry[]>();
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
      // Matched by the key's identity, not its spelling: the read may spell a number otherwise than the mark.
      const byKey = new Map(found.map((item) => [keyIdentity(pick(item, names)), item]));
      for (const e of list) {
        const item = byKey.get(keyIdentity(e.address.keys));
        if (!item) continue;
        const canonical = canonicalItem(item);
        e.read = { item, canonical, hash: hashOfCanonical(canonical) };
        // From here on the item is named by its key as this consistent read returned it (the delete, the re-read
        // after a refused condition, the journal, the records), never as a mark or a canonical form spelled it.
        e.address = { ...e.address, keys: pick(item, names) };
      }
    }),
  );
}

/** Step 2: decide, for every item read, what its marks and its journaled deletion (if any) come to. */
export function decide(live: LiveEntry[], now: number): DecidedEntry[] {
  return live.map((e) => {
    const verdict = e.read ? evaluate(e.settings, e.read.item, now) : undefined;
    const current = e.read && verdict ? { imageHash: e.read.hash, expired: isExpired(verdict) } : undefined;
    const decision = reconcile({
      active: true,
      ...(e.intent ? { intent: { state: e.intent.state, imageHash: e.intent.imageHash } } : {}),
      ...(current ? { item: current } : {}),
    });
    // Marked as expired by a scanner, not quite expired here (its clock is a little ahead of ours): keep the mark
    // for the next sweep rather than drop it, since the scanner does not mark the same expiry again for a while.
    const expiresSoon =
      decision.next === 'drop' &&
      decision.reason === 'not-expired' &&
      verdict?.kind === 'expires' &&
      verdict.expiresAtMs - now <= NEAR_EXPIRY_KEEP_MS;
    const kept: ReconcileDecision = { retract: false, next: 'leave', reason: 'expires-soon' };
    return Object.assign(e, { decision: expiresSoon ? kept : decision });
  });
}

/** Dry run: log each deletion once, and leave every mark as it is. */
export function reportDryRun(run: BatchRun, live: DecidedEntry[]): void {
  for (const e of live.filter(deleting)) {
    const id = `${e.address.sk}|${e.read.hash}`;
    if (!reportOnce(run.ctx, id)) continue;
    metrics.deletesSkipped.inc({ table: e.address.table, reason: 'dry-run' });
    run.ctx.logger.info(
      { table: e.address.table, keys: e.address.keys, dryRun: true },
      'dry run: would delete expired item',
    );
  }
  run.stats.left += live.length;
}

/** The items decided `drop` are done: their marks go at the end of the batch. */
export function dropSettled(work: DecidedEntry[]): void {
  for (const e of work) {
    if (e.decision.next === 'drop') {
      e.done = true;
      metrics.deletesSkipped.inc({ table: e.address.table, reason: e.decision.reason });
    }
  }
}
