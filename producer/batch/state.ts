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
import type { Publisher } from '../../pipeline/publisher';
import type { Next, ReconcileDecision } from '../reconcile';
import type { Doorbells } from '../doorbells';
import type { Semaphore } from '../../core/concurrency';

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

/**
 * One item of the batch as grouped (./decide.ts group): its marks, and what the journal recovered of it. Each step
 * adds what it learns and hands on the narrower type below (LiveEntry, DecidedEntry, DeletingEntry); they are the
 * same objects throughout, so the clean-up sees every entry as the last step left it.
 */
export interface Entry {
  address: MarkAddress;
  /** The item's marks in this batch (a re-mark can put one item in two rows). */
  marks: Mark[];
  intent?: Intent;
  /** The item's intent as the journal must record it at the end of the batch. */
  journal?: Intent;
  /**
   * This batch retracted the item's deletion: `journal` holds it as RETRACTED in every later version of this batch,
   * so that no older journal row can bring the retracted deletion back to be resumed (0009).
   */
  tombstone?: boolean;
  /** Rows to delete at the end. */
  done: boolean;
}

/** An entry the journal records (step 3, or a retraction): the intent it holds for the item. */
export type JournaledEntry = Entry & { journal: Intent };

/** The item as step 1 read it, with canonicalItem(item) and its hash computed once (eventID, SizeBytes, the delete's image check). */
export interface ReadItem {
  item: Item;
  canonical: string;
  hash: string;
}

/** An entry of a table the batch may act on (ENABLED, not paused): its settings and, once read, the item. */
export interface LiveEntry extends Entry {
  settings: TableTtlSettings;
  /** Absent: the item is not in the table (or step 1 has not run yet). */
  read?: ReadItem;
}

/** A live entry after step 2: what its marks and its journaled deletion come to. */
export interface DecidedEntry extends LiveEntry {
  decision: ReconcileDecision;
}

/** A deletion's intent with the image it deletes (the item read, or for a correction the image actually deleted). */
export type Deletion = Intent & { image: Item };

/** A deletion this batch carries out (new or resumed), journaled from step 3 on. */
export interface DeletingEntry extends DecidedEntry {
  read: ReadItem;
  deletion: Deletion;
  journal: Intent;
  /** Set by the delete when the deleted image differed from the published one. */
  correction?: Correction;
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
  journaled: Set<JournaledEntry>;
}

/** A batch that publishes and deletes (not a dry run): its steps publish with this. */
export interface PublishingRun extends BatchRun {
  publisher: Publisher;
}

export function journaledIntents(run: BatchRun): Intent[] {
  return [...run.journaled].map((e) => e.journal);
}

/** Journal the item's deletion RETRACTED in every later version of this batch. */
export function tombstone(run: BatchRun, e: Entry, intent: Intent, reason: string): void {
  const journal: Intent = { ...intent, state: 'RETRACTED', retractReason: reason };
  run.journaled.add(Object.assign(e, { journal, tombstone: true }));
}

const DELETING: ReadonlySet<Next> = new Set(['delete', 'resume-publish', 'resume-delete']);

/** The entry's decision is to delete the item (new, or resumed): only ever taken on an item read (../reconcile.ts). */
export function deleting(e: DecidedEntry): e is DecidedEntry & { read: ReadItem } {
  return e.read !== undefined && DELETING.has(e.decision.next);
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
