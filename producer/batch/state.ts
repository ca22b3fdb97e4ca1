import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LeaseHandle } from '../../core/leases';
import type { Logger } from '../../core/logger';
import type { TableTtlSettings } from '../../policy/settings';
import type { Item } from '../../policy/types';
import type { EnabledTables } from '../../pipeline/enabled-tables';
import type { GuardStore } from '../../pipeline/guard';
import type { SequenceGenerator } from '../../pipeline/image';
import type { BatchJournal, Correction, Intent, Recovered } from '../journal';
import type { Mark, MarkAddress } from '../../pipeline/marks';
import type { ProducerOptions } from '../options';
import type { Publisher } from '../publisher';
import type { ReconcileDecision } from '../reconcile';
import type { Doorbells } from '../doorbells';
import type { Semaphore } from '../semaphore';

/**
 * The state one batch's steps share (./runner.ts runs them in order): what the producer hands every batch, the
 * batch's input, its entries (one per item) and its journal.
 */

export interface BatchContext {
  options: ProducerOptions;
  ddb: DynamoDBClient;
  /** Undefined in dry-run mode: nothing is ever published. */
  publisher?: Publisher;
  logger: Logger;
  tables: EnabledTables;
  guard: GuardStore;
  deletes: Semaphore;
  /** The doorbells of the shards waiting for work, read together. */
  bells: Doorbells;
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

export interface Entry {
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

/** One batch under way. */
export interface BatchRun {
  ctx: BatchContext;
  input: BatchInput;
  lease: LeaseHandle;
  stats: BatchStats;
  entries: Entry[];
  journal: BatchJournal;
  /** The entries this batch's journal records: its deletions (step 3) and the deletions it retracted. */
  journaled: Set<Entry>;
}

export function journaledIntents(run: BatchRun): Intent[] {
  return [...run.journaled].map((e) => e.journal as Intent);
}

/** Journal the item's deletion RETRACTED in every later version of this batch. */
export function tombstone(run: BatchRun, e: Entry, intent: Intent, reason: string): void {
  e.journal = { ...intent, state: 'RETRACTED', retractReason: reason };
  e.tombstone = true;
  run.journaled.add(e);
}

/** The entry's decision is to delete the item (new, or resumed). */
export function deleting(e: Entry): boolean {
  return e.decision !== undefined && ['delete', 'resume-publish', 'resume-delete'].includes(e.decision.next);
}

/** True the first time `id` is seen (bounded memory: forgets everything past 100k ids and starts over). */
export function reportOnce(ctx: BatchContext, id: string): boolean {
  if (ctx.reported.has(id)) return false;
  if (ctx.reported.size >= 100_000) ctx.reported.clear();
  ctx.reported.add(id);
  return true;
}

export function keyNames(keys: Item): string[] {
  return Object.keys(keys);
}

export function pick(item: Item, names: readonly string[]): Item {
  const out: Item = {};
  for (const n of names) if (item[n] !== undefined) out[n] = item[n];
  return out;
}
