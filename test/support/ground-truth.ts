import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffCeilingMs, isDynamoThrottleOrTransient } from '../../core/retry';
import type { TableTtlSettings } from '../../policy/settings';
import { imageHash } from '../../pipeline/image';
import { messageKey, type Retraction, type StreamRecord } from '../../schemas';
import type { StreamMessage } from './stream-log';
import { scanTable } from './stack';

/**
 * Ground truth for the pipeline's invariants. A table is seeded from a seeded PRNG with items whose fate is known by
 * construction (not by asking the policy engine: the engine is part of what is under test), a background writer
 * changes some of them while the pipeline runs and records every version it writes, and `checkInvariants` compares
 * the table and the whole stream topic against that history, returning one precise line per violation.
 *
 * The model: every key has a list of versions (the images we wrote, in order). A version ends by being overwritten
 * (by us), by being observed deleted (a test re-created the key after seeing it gone), or it is the last one. A
 * version has `expiresAtMs` when it becomes deletable during the test, `null` when it must never be deleted.
 */

export type Item = Record<string, AttributeValue>;

// ---------------------------------------------------------------------------------------------------------------
// Seeded PRNG (sfc32 seeded through splitmix32): the same seed gives the same table, the same writer schedule and
// the same kill schedule, so a failing seed can be replayed.

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    let s = seed >>> 0;
    const split = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = split();
    this.b = split();
    this.c = split();
    this.d = split();
    for (let i = 0; i < 12; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) >>> 0;
    return t / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('pick from an empty list');
    return xs[Math.floor(this.next() * xs.length)] as T;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  text(min: number, max: number): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-:/#éλ漢🙂';
    const chars = [...alphabet];
    let s = '';
    const n = this.int(min, max);
    for (let i = 0; i < n; i++) s += this.pick(chars);
    return s;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(0, 255);
    return out;
  }

  hex(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += this.int(0, 15).toString(16);
    return s;
  }

  shuffle<T>(xs: readonly T[]): T[] {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }
}

/** A seed from the environment list, or fresh ones; printed by the tests so a failure can be replayed. */
export function faultSeeds(env: NodeJS.ProcessEnv = process.env, count = 3): number[] {
  const raw = env.TTLSTREAM_FAULT_SEEDS?.trim();
  if (raw) {
    const seeds = raw.split(',').map((s) => Number(s.trim()));
    const bad = seeds.find((s) => !Number.isInteger(s) || s < 0 || s > 0xffffffff);
    if (bad !== undefined)
      throw new Error(`TTLSTREAM_FAULT_SEEDS: "${raw}" is not a list of integers 0..2^32-1`);
    return seeds;
  }
  return Array.from({ length: count }, () => Math.floor(Math.random() * 0xffffffff));
}

// ---------------------------------------------------------------------------------------------------------------
// Categories of seeded items.

export type Category =
  /** TTL already past (up to an hour, some with fractional seconds): deleted. */
  | 'expired'
  /** TTL a few seconds after seeding, nobody touches it: deleted once it has expired. */
  | 'soon'
  /** TTL an hour to a year ahead: kept. */
  | 'future'
  /** No TTL attribute at all: kept. */
  | 'no-ttl'
  /** TTL of the wrong type (S, NULL, BOOL): kept (DynamoDB ignores it; MongoDB: not a date). */
  | 'malformed-s'
  | 'malformed-null'
  | 'malformed-bool'
  /** dynamodb mode: more than 5 years in the past, ignored and kept. mongo mode: a very old date, deleted. */
  | 'malformed-old'
  /** Milliseconds written into a seconds attribute: thousands of years ahead, kept. */
  | 'malformed-millis'
  /** Expired, legal hold BOOL true: kept. */
  | 'held'
  /** Expired, hold attribute present but not BOOL true (S "true", BOOL false): no hold, deleted. */
  | 'hold-not-bool'
  /** TTL a few seconds ahead; the writer extends it by an hour before it expires: kept. */
  | 'extend'
  /** TTL a few seconds ahead; the writer rewrites the item without the TTL attribute before it expires: kept. */
  | 'rewrite'
  /** Already expired; the writer extends it while the pipeline runs: the writer's outcome decides. */
  | 'race'
  /**
   * Already expired; the writer changes another attribute (not the TTL) while the pipeline runs. Still expired
   * either way, so it is deleted, and the record must carry the image as it was when deleted (the delete condition
   * cannot pin every attribute: the producer must notice the difference and correct its record).
   */
  | 'touch';

export const CATEGORIES: readonly Category[] = [
  'expired',
  'soon',
  'future',
  'no-ttl',
  'malformed-s',
  'malformed-null',
  'malformed-bool',
  'malformed-old',
  'malformed-millis',
  'held',
  'hold-not-bool',
  'extend',
  'rewrite',
  'race',
  'touch',
];

export type Counts = Partial<Record<Category, number>>;

/** A small table with every category; the fault scenarios use this (or a multiple of it). */
export const DEFAULT_COUNTS: Readonly<Record<Category, number>> = {
  expired: 60,
  soon: 20,
  future: 15,
  'no-ttl': 5,
  'malformed-s': 3,
  'malformed-null': 3,
  'malformed-bool': 3,
  'malformed-old': 3,
  'malformed-millis': 3,
  held: 6,
  'hold-not-bool': 4,
  extend: 10,
  rewrite: 6,
  race: 10,
  // None by default: a SIGKILL (or a DynamoDB restart) between a conditional delete and the batch's witness loses
  // the ALL_OLD image, so a touched item's record then keeps the image read before the touch, a residual risk
  // named in docs/decisions/0001. Scenarios whose faults cannot hit that window use WITH_TOUCH.
  touch: 0,
};

/** DEFAULT_COUNTS plus items a writer changes (not their TTL) while the pipeline runs: records must be corrected. */
export const WITH_TOUCH: Readonly<Record<Category, number>> = { ...DEFAULT_COUNTS, touch: 8 };

export function scaleCounts(
  factor: number,
  base: Readonly<Record<Category, number>> = DEFAULT_COUNTS,
): Counts {
  const out: Counts = {};
  for (const c of CATEGORIES) out[c] = base[c] === 0 ? 0 : Math.max(1, Math.round(base[c] * factor));
  return out;
}

/** How a table's policy turns "expires at t" into an attribute; ground truth for the two modes it supports. */
export interface TtlModel {
  settings: TableTtlSettings;
  /** The attribute the writer extends or removes. */
  attribute: string;
  holdAttribute: string;
  /** The attribute value that makes the item expire at `expiresAtMs` (whole or fractional seconds). */
  valueFor(expiresAtMs: number, fractional?: boolean): AttributeValue;
  /** The exact instant a Number value of the attribute makes the item expire (ground truth, not the engine). */
  expiryOf(value: AttributeValue): number;
  /** Whether a 'malformed-old' item is deletable under this policy. */
  oldIsExpired: boolean;
  /**
   * What the writers' client adds to every item it writes (the expiry-index stamp's shard attribute): recorded
   * images include it, since the server stores and the pipeline deletes the item with it.
   */
  stampImage?(image: Item): Item;
}

/**
 * A Number as the server stores it (no trailing fractional zeros): the images we record must equal the images the
 * server returns, and DynamoDB normalizes "12.50" to "12.5".
 */
export function canonicalNumber(text: string): string {
  if (!text.includes('.')) return text;
  const trimmed = text.replace(/0+$/, '').replace(/\.$/, '');
  return trimmed === '-0' ? '0' : trimmed;
}

function seconds(ms: number, fractional = false): string {
  return canonicalNumber(fractional ? (ms / 1000).toFixed(2) : String(Math.floor(ms / 1000)));
}

export function dynamodbModel(attribute = 'ttl', holdAttribute = 'hold'): TtlModel {
  return {
    settings: { policy: { mode: 'dynamodb', attributeName: attribute }, legalHoldAttribute: holdAttribute },
    attribute,
    holdAttribute,
    valueFor: (ms, fractional) => ({ N: seconds(ms, fractional) }),
    expiryOf: (value) => Math.round(Number(value.N) * 1000),
    oldIsExpired: false,
  };
}

/** MongoDB mode: the item expires `expireAfterSeconds` after its (epoch seconds) time field. */
export function mongoModel(
  timeField = 'createdAt',
  expireAfterSeconds = 60,
  holdAttribute = 'hold',
): TtlModel {
  return {
    settings: {
      policy: { mode: 'mongo', expireAfterSeconds, timeField, timeFormat: 'epoch-seconds' },
      legalHoldAttribute: holdAttribute,
    },
    attribute: timeField,
    holdAttribute,
    valueFor: (ms, fractional) => ({ N: seconds(ms - expireAfterSeconds * 1000, fractional) }),
    expiryOf: (value) => Math.round(Number(value.N) * 1000) + expireAfterSeconds * 1000,
    oldIsExpired: true,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The truth.

export interface Version {
  image: Item;
  /** When this version becomes deletable; null when it must never be deleted during the test. */
  expiresAtMs: number | null;
  writtenAtMs: number;
  by: 'seed' | 'writer' | 'test';
  /** How the version ended, if it did. */
  ended?: 'overwritten' | 'observed-deleted';
  note?: string;
}

export interface KeyTruth {
  /** messageKey(table, keys): the stream's message key, also our map key. */
  id: string;
  pk: string;
  keys: Item;
  category: Category;
  versions: Version[];
}

export interface WriterPlanEntry {
  pk: string;
  kind: 'extend' | 'rewrite' | 'touch';
  /** Offset from the writer's start. */
  atOffsetMs: number;
}

export class TableTruth {
  readonly keys = new Map<string, KeyTruth>();
  readonly byPk = new Map<string, KeyTruth>();
  /** What the writer will do, in time order. */
  readonly writerPlan: WriterPlanEntry[] = [];
  /** Notes of writer operations that found their item already gone (evidence for the checker's messages). */
  readonly writerLog: string[] = [];
  /** The largest expiry of any seeded version: the pipeline cannot be finished before it. */
  latestExpiryMs = 0;

  constructor(
    readonly table: string,
    readonly model: TtlModel,
    readonly seed: number,
    readonly seededAtMs: number,
  ) {}

  add(k: KeyTruth): void {
    const stamp = this.model.stampImage;
    if (stamp) for (const v of k.versions) v.image = stamp(v.image);
    this.keys.set(k.id, k);
    this.byPk.set(k.pk, k);
    for (const v of k.versions)
      if (v.expiresAtMs !== null) this.latestExpiryMs = Math.max(this.latestExpiryMs, v.expiresAtMs);
  }

  last(k: KeyTruth): Version {
    return k.versions[k.versions.length - 1] as Version;
  }

  /** A new version written by us over the current one (the current one was overwritten, not deleted). */
  overwrite(pk: string, image: Item, expiresAtMs: number | null, by: Version['by'], atMs = Date.now()): void {
    const k = this.must(pk);
    const last = this.last(k);
    last.ended = 'overwritten';
    k.versions.push({ image: this.model.stampImage?.(image) ?? image, expiresAtMs, writtenAtMs: atMs, by });
  }

  /** A key re-created after the test saw it deleted: the current version was deleted by the pipeline. */
  recreate(pk: string, image: Item, expiresAtMs: number | null, atMs = Date.now()): void {
    const k = this.must(pk);
    this.last(k).ended = 'observed-deleted';
    k.versions.push({
      image: this.model.stampImage?.(image) ?? image,
      expiresAtMs,
      writtenAtMs: atMs,
      by: 'test',
      note: 're-created after deletion',
    });
  }

  private must(pk: string): KeyTruth {
    const k = this.byPk.get(pk);
    if (!k) throw new Error(`ground truth: no seeded key ${pk} in ${this.table}`);
    return k;
  }

  /** Keys whose current version should be gone by `nowMs`. */
  dueForDeletion(nowMs: number): KeyTruth[] {
    return [...this.keys.values()].filter((k) => {
      const e = this.last(k).expiresAtMs;
      return e !== null && e <= nowMs;
    });
  }

  countsByCategory(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const k of this.keys.values()) out[k.category] = (out[k.category] ?? 0) + 1;
    return out;
  }
}

export interface SeedOptions {
  seed: number;
  model?: TtlModel;
  counts?: Counts;
  /** Milliseconds after seeding at which 'soon' items expire: [min, max]. */
  soonMs?: [number, number];
  /** 'extend'/'rewrite' items expire this long after seeding... */
  writerExpiryMs?: [number, number];
  /** ...and the writer changes them this long after it starts (must be well before the expiry above). */
  writerAtMs?: [number, number];
  /** 'race' items: the writer extends them this long after it starts (they are already expired). */
  raceAtMs?: [number, number];
  /** Approximate payload bytes per item (default: a few hundred). */
  payloadBytes?: number;
  nowMs?: number;
}

const HOUR = 3_600_000;
const YEAR = 365 * 24 * HOUR;

function richAttributes(rng: Rng, payloadBytes: number): Item {
  const out: Item = { payload: { S: rng.text(Math.max(1, payloadBytes - 40), payloadBytes) } };
  if (rng.chance(0.7))
    out.n = {
      N: canonicalNumber(
        rng.chance(0.5) ? String(rng.int(-1e6, 1e6)) : `${rng.int(0, 9999)}.${rng.int(1, 99)}`,
      ),
    };
  if (rng.chance(0.5)) out.bin = { B: rng.bytes(rng.int(1, 24)) };
  if (rng.chance(0.5)) out.tags = { SS: [...new Set([rng.text(1, 6), rng.text(1, 6), 'x'])] };
  if (rng.chance(0.3)) out.nums = { NS: [...new Set([String(rng.int(0, 50)), String(rng.int(51, 99))])] };
  if (rng.chance(0.5)) {
    out.doc = {
      M: {
        a: {
          L: [{ N: String(rng.int(0, 9)) }, { NULL: true }, { BOOL: rng.chance(0.5) }, { S: rng.text(0, 8) }],
        },
        nested: { M: { deep: { S: rng.text(1, 10) }, empty: { M: {} } } },
      },
    };
  }
  if (rng.chance(0.2)) out.flag = { BOOL: rng.chance(0.5) };
  return out;
}

/**
 * Build (not write) the seeded items of one table. Pure: the same options give the same items, so the seed alone
 * reproduces a run's table.
 */
export function planSeed(table: string, options: SeedOptions): TableTruth {
  const model = options.model ?? dynamodbModel();
  const counts: Record<Category, number> = { ...DEFAULT_COUNTS, ...(options.counts ?? {}) } as Record<
    Category,
    number
  >;
  const now = options.nowMs ?? Date.now();
  const rng = new Rng(options.seed);
  const [soonMin, soonMax] = options.soonMs ?? [2000, 6000];
  const [wxMin, wxMax] = options.writerExpiryMs ?? [9000, 12_000];
  const [waMin, waMax] = options.writerAtMs ?? [300, 3500];
  const [raMin, raMax] = options.raceAtMs ?? [1500, 6000];
  const payloadBytes = options.payloadBytes ?? 120;
  const truth = new TableTruth(table, model, options.seed, now);
  const { attribute: ttl, holdAttribute: hold } = model;

  const plan: Array<{ category: Category; index: number }> = [];
  for (const c of CATEGORIES) for (let i = 0; i < counts[c]; i++) plan.push({ category: c, index: i });

  for (const { category, index } of rng.shuffle(plan)) {
    const pk = `${category}-${index}-${rng.hex(6)}`;
    const keys: Item = { pk: { S: pk } };
    const image: Item = { ...keys, ...richAttributes(rng, payloadBytes) };
    let expiresAtMs: number | null = null;
    switch (category) {
      case 'expired': {
        expiresAtMs = now - rng.int(1000, HOUR);
        image[ttl] = model.valueFor(expiresAtMs, rng.chance(0.2));
        break;
      }
      case 'soon':
        expiresAtMs = now + rng.int(soonMin, soonMax);
        image[ttl] = model.valueFor(expiresAtMs);
        break;
      case 'future':
        image[ttl] = model.valueFor(now + rng.int(HOUR, YEAR));
        break;
      case 'no-ttl':
        break;
      case 'malformed-s':
        image[ttl] = { S: String(Math.floor((now - 60_000) / 1000)) };
        break;
      case 'malformed-null':
        image[ttl] = { NULL: true };
        break;
      case 'malformed-bool':
        image[ttl] = { BOOL: rng.chance(0.5) };
        break;
      case 'malformed-old': {
        const at = now - 6 * YEAR - rng.int(0, YEAR);
        image[ttl] = model.valueFor(at);
        if (model.oldIsExpired) expiresAtMs = at;
        break;
      }
      case 'malformed-millis':
        // Milliseconds in a seconds attribute: read as seconds it lies tens of thousands of years ahead.
        image[ttl] = { N: String(now - rng.int(0, HOUR)) };
        break;
      case 'held':
        image[ttl] = model.valueFor(now - rng.int(1000, HOUR));
        image[hold] = { BOOL: true };
        break;
      case 'hold-not-bool':
        expiresAtMs = now - rng.int(1000, HOUR);
        image[ttl] = model.valueFor(expiresAtMs);
        image[hold] = rng.chance(0.5) ? { S: 'true' } : { BOOL: false };
        break;
      case 'extend':
      case 'rewrite': {
        expiresAtMs = now + rng.int(wxMin, wxMax);
        image[ttl] = model.valueFor(expiresAtMs);
        truth.writerPlan.push({ pk, kind: category, atOffsetMs: rng.int(waMin, waMax) });
        break;
      }
      case 'race':
        expiresAtMs = now - rng.int(1000, 60_000);
        image[ttl] = model.valueFor(expiresAtMs);
        truth.writerPlan.push({ pk, kind: 'extend', atOffsetMs: rng.int(raMin, raMax) });
        break;
      case 'touch':
        expiresAtMs = now - rng.int(1000, 60_000);
        image[ttl] = model.valueFor(expiresAtMs);
        truth.writerPlan.push({ pk, kind: 'touch', atOffsetMs: rng.int(raMin, raMax) });
        break;
    }
    // The exact expiry the stored value means (whole seconds round the requested instant down).
    const ttlValue = image[ttl];
    if (expiresAtMs !== null && ttlValue !== undefined) expiresAtMs = model.expiryOf(ttlValue);
    truth.add({
      id: messageKey(table, keys),
      pk,
      keys,
      category,
      versions: [{ image, expiresAtMs, writtenAtMs: now, by: 'seed' }],
    });
  }
  truth.writerPlan.sort((a, b) => a.atOffsetMs - b.atOffsetMs);
  return truth;
}

/**
 * Retry transient failures for up to `forMs`: the test's own writes must outlast a DynamoDB restart (seconds with
 * connections refused), which a fixed number of jittered retries may not.
 */
/**
 * Transient for the test's own clients. Under jest, Node's network errors come from another realm, fail the SDK's
 * `instanceof Error` and reach us re-wrapped as "AWS SDK error wrapper for Error: connect ECONNREFUSED ..." without
 * their `code`, which core/retry.ts (rightly, for plain Node) does not recognize.
 */
export function isTransientInTests(err: unknown): boolean {
  if (isDynamoThrottleOrTransient(err)) return true;
  const message = (err as { message?: unknown } | null)?.message;
  return (
    typeof message === 'string' && /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|socket hang up/.test(message)
  );
}

export async function retryTransient<T>(fn: () => Promise<T>, forMs = 90_000): Promise<T> {
  const deadline = Date.now() + forMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransientInTests(err) || Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}

/** BatchWriteItem the items, 25 per request, a few requests in flight, re-sending unprocessed ones. */
export async function putAll(
  ddb: DynamoDBClient,
  table: string,
  items: readonly Item[],
  parallel = 4,
): Promise<void> {
  const chunks: WriteRequest[][] = [];
  for (let i = 0; i < items.length; i += 25)
    chunks.push(items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < chunks.length) {
      let pending = chunks[next++] as WriteRequest[];
      for (let round = 0; pending.length > 0; round++) {
        if (round > 20) throw new Error(`seeding ${table}: ${pending.length} items stay unprocessed`);
        if (round > 0) await sleep(backoffCeilingMs(round, { initialDelayMs: 20, maxDelayMs: 1000 }));
        const out = await retryTransient(() =>
          ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } })),
        );
        pending = out.UnprocessedItems?.[table] ?? [];
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** Plan and write the seeded items. */
export async function seedTable(
  ddb: DynamoDBClient,
  table: string,
  options: SeedOptions,
): Promise<TableTruth> {
  const truth = planSeed(table, options);
  await putAll(
    ddb,
    table,
    [...truth.keys.values()].map((k) => (k.versions[0] as Version).image),
  );
  return truth;
}

// ---------------------------------------------------------------------------------------------------------------
// The concurrent writer.

export interface RunningWriter {
  /** Resolves when every planned operation has been carried out (each with a definite outcome). */
  done: Promise<void>;
  /** Operations that succeeded before the item's expiry (the "concurrently extended in time" cases). */
  stats(): { succeeded: number; beforeExpiry: number; foundGone: number };
}

/**
 * Carries out `truth.writerPlan` from now on: 'extend' sets the TTL an hour ahead, 'rewrite' puts the item again
 * without the TTL attribute (and with `rewritten: true`), both only if the item still exists. Each success becomes a
 * new version; a ConditionalCheckFailed means the pipeline deleted the item first, which the checker then expects to
 * see as a deletion of the version before.
 */
export function startWriter(ddb: DynamoDBClient, truth: TableTruth): RunningWriter {
  const started = Date.now();
  let succeeded = 0;
  let beforeExpiry = 0;
  let foundGone = 0;
  const { attribute: ttl } = truth.model;
  const one = async (op: WriterPlanEntry): Promise<void> => {
    const wait = started + op.atOffsetMs - Date.now();
    if (wait > 0) await sleep(wait);
    const k = truth.byPk.get(op.pk) as KeyTruth;
    const prev = truth.last(k);
    try {
      if (op.kind === 'extend') {
        const far = Date.now() + HOUR;
        const out = await retryTransient(() =>
          ddb.send(
            new UpdateItemCommand({
              TableName: truth.table,
              Key: k.keys,
              UpdateExpression: 'SET #t = :v, writerOp = :op',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeNames: { '#t': ttl },
              ExpressionAttributeValues: { ':v': truth.model.valueFor(far), ':op': { S: 'extend' } },
              ReturnValues: 'ALL_NEW',
            }),
          ),
        );
        const at = Date.now();
        truth.overwrite(op.pk, out.Attributes ?? {}, null, 'writer', at);
        succeeded++;
        if (prev.expiresAtMs !== null && at < prev.expiresAtMs) beforeExpiry++;
      } else if (op.kind === 'touch') {
        const out = await retryTransient(() =>
          ddb.send(
            new UpdateItemCommand({
              TableName: truth.table,
              Key: k.keys,
              UpdateExpression: 'SET payload = :p, writerOp = :op',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeValues: {
                ':p': { S: `touched by the writer at ${Date.now()}` },
                ':op': { S: 'touch' },
              },
              ReturnValues: 'ALL_NEW',
            }),
          ),
        );
        // Still expired: the new version is deletable from the same instant.
        truth.overwrite(op.pk, out.Attributes ?? {}, prev.expiresAtMs, 'writer', Date.now());
        succeeded++;
      } else {
        const image: Item = { ...prev.image, rewritten: { BOOL: true }, writerOp: { S: 'rewrite' } };
        delete image[ttl];
        await retryTransient(() =>
          ddb.send(
            new PutItemCommand({
              TableName: truth.table,
              Item: image,
              ConditionExpression: 'attribute_exists(pk)',
            }),
          ),
        );
        const at = Date.now();
        truth.overwrite(op.pk, image, null, 'writer', at);
        succeeded++;
        if (prev.expiresAtMs !== null && at < prev.expiresAtMs) beforeExpiry++;
      }
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      foundGone++;
      truth.writerLog.push(
        `${op.kind} of ${op.pk} at ${new Date().toISOString()} found the item gone` +
          (prev.expiresAtMs !== null
            ? ` (its TTL was ${new Date(prev.expiresAtMs).toISOString()})`
            : ' (it never expires)'),
      );
    }
  };
  const done = Promise.all(truth.writerPlan.map(one)).then(() => undefined);
  // Surfaced through `done`; this keeps an early failure from being reported as unhandled meanwhile.
  done.catch(() => undefined);
  return { done, stats: () => ({ succeeded, beforeExpiry, foundGone }) };
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the table.

/** Every item of the table by message key (consistent Scan). */
export async function snapshotTable(ddb: DynamoDBClient, table: string): Promise<Map<string, Item>> {
  const items = await scanTable(ddb, table);
  return new Map(items.map((item) => [messageKey(table, { pk: item.pk as AttributeValue }), item]));
}

// ---------------------------------------------------------------------------------------------------------------
// Effective records.

export interface DecodedRemove {
  record: StreamRecord;
  partition: number;
  offset: number;
  timestampMs: number;
}

export interface EffectiveView {
  /** Effective REMOVE records by message key: one per distinct eventID, retracted eventIDs dropped. */
  effective: Map<string, DecodedRemove[]>;
  /** Every REMOVE message (duplicates included) by message key. */
  allRemoves: Map<string, DecodedRemove[]>;
  retractions: Retraction[];
  /** Problems in the stream itself: poison, a Kafka key that disagrees with its record, one eventID used twice. */
  problems: string[];
  counts: { messages: number; removes: number; duplicateRemoves: number; retractions: number };
}

/** The view a consumer is told to build (docs/stream-contract.md): de-duplicate by eventID, honour RETRACTs. */
export function effectiveRecords(messages: readonly StreamMessage[]): EffectiveView {
  const problems: string[] = [];
  const byEventId = new Map<string, DecodedRemove>();
  const allRemoves = new Map<string, DecodedRemove[]>();
  const retractions: Retraction[] = [];
  let removes = 0;
  let duplicateRemoves = 0;
  for (const m of messages) {
    if (m.poison !== undefined) {
      problems.push(`poison message at ${m.partition}:${m.offset}: ${m.poison}`);
      continue;
    }
    const d = m.decoded;
    if (!d) continue;
    if (d.kind === 'retract') {
      retractions.push(d.retraction);
      continue;
    }
    removes++;
    const entry: DecodedRemove = {
      record: d.record,
      partition: m.partition,
      offset: m.offset,
      timestampMs: m.timestampMs,
    };
    const table = d.record.eventSourceARN.split('/')[1] ?? '';
    const key = messageKey(table, d.record.dynamodb.Keys);
    if (m.key !== null && m.key !== key)
      problems.push(`message ${m.partition}:${m.offset} has Kafka key ${m.key} but its record is for ${key}`);
    allRemoves.set(key, [...(allRemoves.get(key) ?? []), entry]);
    const seen = byEventId.get(d.record.eventID);
    if (seen) {
      duplicateRemoves++;
      if (
        imageHash(seen.record.dynamodb.OldImage) !== imageHash(d.record.dynamodb.OldImage) ||
        key !== messageKey(table, seen.record.dynamodb.Keys)
      )
        problems.push(
          `eventID ${d.record.eventID} is used by two different REMOVE records (${seen.partition}:${seen.offset} and ${m.partition}:${m.offset}): de-duplication would drop one deletion`,
        );
      continue;
    }
    byEventId.set(d.record.eventID, entry);
  }
  // A retraction of an eventID never seen is legitimate (a crash between intent and publish): nothing to drop.
  const retracted = new Set(retractions.map((r) => r.retractsEventID));
  const effective = new Map<string, DecodedRemove[]>();
  for (const [id, r] of byEventId) {
    if (retracted.has(id)) continue;
    const table = r.record.eventSourceARN.split('/')[1] ?? '';
    const key = messageKey(table, r.record.dynamodb.Keys);
    effective.set(key, [...(effective.get(key) ?? []), r]);
  }
  return {
    effective,
    allRemoves,
    retractions,
    problems,
    counts: { messages: messages.length, removes, duplicateRemoves, retractions: retractions.length },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Publish-before-delete probes.

/**
 * One observation for invariant 3: the keys absent from the table at a scan, and the topic's end offsets read after
 * that scan finished. If every deletion's record is on Kafka before the delete, each absent key has a REMOVE below
 * those offsets, whenever the topic is read afterwards.
 */
export interface PublishProbe {
  scanStartedMs: number;
  table: string;
  absent: string[];
  highWater: Map<number, number>;
  /** What was happening (e.g. "after crash at producer.after-delete"), for the failure message. */
  label: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The checker.

export interface CheckInput {
  truths: readonly TableTruth[];
  /** Final table contents, by table name. */
  snapshots: ReadonlyMap<string, ReadonlyMap<string, Item>>;
  messages: readonly StreamMessage[];
  probes?: readonly PublishProbe[];
  region?: string;
  /** When the check is made; versions whose expiry is after it are not yet due. */
  nowMs?: number;
}

export interface CheckResult {
  ok: boolean;
  problems: string[];
  summary: {
    keys: number;
    deletedVersions: number;
    keptKeys: number;
    effectiveRecords: number;
    removes: number;
    duplicateRemoves: number;
    retractions: number;
    probes: number;
    probedAbsentKeys: number;
  };
}

/** SequenceNumbers are decimal strings longer than a double holds: by length, then by text. */
function compareSequence(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

function show(image: Item | undefined, attr: string): string {
  if (!image) return 'absent';
  const v = image[attr];
  return v === undefined ? `${attr} absent` : `${attr}=${JSON.stringify(v)}`;
}

function versionLabel(k: KeyTruth, v: Version, attr: string): string {
  const i = k.versions.indexOf(v);
  return `version ${i + 1}/${k.versions.length} (${v.by}${v.note ? `, ${v.note}` : ''}, ${show(v.image, attr)}, ${
    v.expiresAtMs === null ? 'never expires' : `expires ${new Date(v.expiresAtMs).toISOString()}`
  })`;
}

/**
 * Invariants 1–3 against ground truth. Returns one line per violation naming the table, the key and what was
 * expected; `ok` when there are none.
 */
export function checkInvariants(input: CheckInput): CheckResult {
  const now = input.nowMs ?? Date.now();
  const view = effectiveRecords(input.messages);
  const problems: string[] = [...view.problems];
  let deletedVersions = 0;
  let keptKeys = 0;
  const known = new Set<string>();

  for (const truth of input.truths) {
    const table = truth.table;
    const attr = truth.model.attribute;
    const snapshot = input.snapshots.get(table);
    if (!snapshot) {
      problems.push(`${table}: no final snapshot given to the checker`);
      continue;
    }
    for (const [id] of snapshot)
      if (!truth.keys.has(id)) problems.push(`${table}: unexpected item ${id} in the table`);

    for (const k of truth.keys.values()) {
      known.add(k.id);
      const where = `${table} ${k.pk} [${k.category}]`;
      const last = truth.last(k);
      const present = snapshot.get(k.id);
      const deleted: Version[] = k.versions.filter((v) => v.ended === 'observed-deleted');
      if (!present) deleted.push(last);

      // Invariant 2 (and the pipeline having finished): the last version's fate.
      const due = last.expiresAtMs !== null && last.expiresAtMs <= now;
      if (present) {
        keptKeys++;
        if (due)
          problems.push(
            `${where}: expired ${versionLabel(k, last, attr)} is still in the table (not deleted)`,
          );
        else if (imageHash(present) !== imageHash(last.image))
          problems.push(
            `${where}: item in the table differs from ${versionLabel(k, last, attr)}: found ${show(present, attr)}`,
          );
      }

      // Invariant 1: exactly one effective REMOVE per deleted version, carrying that version's image; none else.
      // Versions with one image are counted together: an item that comes back byte-identical (a re-put, a restore
      // with its TTL kept) and expires again is a second deletion and needs a second effective record, which a
      // consumer de-duplicating by eventID keeps only if the two deletions have different eventIDs.
      const eff = view.effective.get(k.id) ?? [];
      const unmatched = new Set(eff);
      const byImage = new Map<string, Version[]>();
      for (const v of deleted) {
        const h = imageHash(v.image);
        byImage.set(h, [...(byImage.get(h) ?? []), v]);
      }
      for (const [h, versions] of byImage) {
        const matching = eff
          .filter((r) => imageHash(r.record.dynamodb.OldImage) === h)
          .sort((a, b) =>
            compareSequence(a.record.dynamodb.SequenceNumber, b.record.dynamodb.SequenceNumber),
          );
        for (const r of matching) unmatched.delete(r);
        if (matching.length !== versions.length) {
          const other = eff.filter((r) => imageHash(r.record.dynamodb.OldImage) !== h);
          const raw = (view.allRemoves.get(k.id) ?? []).length;
          problems.push(
            `${where}: deleted ${versions.map((v) => versionLabel(k, v, attr)).join(' and ')} ${
              versions.length === 1 ? 'has' : 'have'
            } ${matching.length} effective REMOVE records with ${versions.length === 1 ? 'its' : 'their'} image, expected ${
              versions.length === 1 ? 'exactly 1' : `exactly ${versions.length}, one per deletion`
            }` +
              ` (effective records with another image: ${other.length}; REMOVE messages for the key incl. duplicates and retracted: ${raw})`,
          );
        }
        // The n-th deletion of an image is the n-th of its records by SequenceNumber (larger for a later deletion).
        matching.forEach((r, i) => {
          const v = versions[Math.min(i, versions.length - 1)] as Version;
          const rec = r.record;
          if (v.expiresAtMs !== null) {
            // Invariant 2 at the moment of deletion: the record is decided, and the message sent, after the expiry.
            if (rec.dynamodb.ApproximateCreationDateTime < Math.floor(v.expiresAtMs / 1000))
              problems.push(
                `${where}: REMOVE ${rec.eventID} was decided at ${rec.dynamodb.ApproximateCreationDateTime}s, before the item expired at ${v.expiresAtMs / 1000}s`,
              );
            if (r.timestampMs < v.expiresAtMs)
              problems.push(
                `${where}: REMOVE ${rec.eventID} was published at ${new Date(r.timestampMs).toISOString()}, before the item expired at ${new Date(v.expiresAtMs).toISOString()}`,
              );
          }
          if (
            rec.eventName !== 'REMOVE' ||
            rec.userIdentity?.type !== 'Service' ||
            rec.userIdentity.principalId !== 'dynamodb.amazonaws.com'
          )
            problems.push(`${where}: REMOVE ${rec.eventID} lacks the TTL service identity`);
          if (messageKey(table, rec.dynamodb.Keys) !== k.id)
            problems.push(`${where}: REMOVE ${rec.eventID} has Keys ${JSON.stringify(rec.dynamodb.Keys)}`);
          if (input.region && !rec.eventSourceARN.startsWith(`arn:aws:dynamodb:${input.region}:`))
            problems.push(`${where}: REMOVE ${rec.eventID} has eventSourceARN ${rec.eventSourceARN}`);
        });
      }
      for (const v of deleted) {
        deletedVersions++;
        if (v.expiresAtMs === null)
          problems.push(`${where}: DELETED although ${versionLabel(k, v, attr)} must never be deleted`);
      }
      for (const r of unmatched) {
        const h = imageHash(r.record.dynamodb.OldImage);
        const v = k.versions.find((x) => imageHash(x.image) === h);
        problems.push(
          `${where}: effective REMOVE ${r.record.eventID} (${r.partition}:${r.offset}) for ${
            v
              ? `${versionLabel(k, v, attr)}, which was not deleted`
              : `an image we never wrote (${show(r.record.dynamodb.OldImage, attr)})`
          }${present ? '; the item is still in the table' : ''}`,
        );
      }
    }
  }
  for (const [id, recs] of view.effective) {
    if (!known.has(id))
      problems.push(`effective REMOVE for a key that was never seeded: ${id} (${recs.length} records)`);
  }

  // Invariant 3: every key absent at a probe had a REMOVE on Kafka below the offsets read after that probe's scan.
  let probedAbsentKeys = 0;
  const truthByTable = new Map(input.truths.map((t) => [t.table, t]));
  for (const probe of input.probes ?? []) {
    const truth = truthByTable.get(probe.table);
    for (const id of probe.absent) {
      probedAbsentKeys++;
      const before = (view.allRemoves.get(id) ?? []).filter(
        (r) => r.offset < (probe.highWater.get(r.partition) ?? 0),
      );
      const k = truth?.keys.get(id);
      if (before.length === 0) {
        problems.push(
          `${probe.table} ${k?.pk ?? id}: absent from the table at ${new Date(probe.scanStartedMs).toISOString()} (${probe.label}) ` +
            `but no REMOVE for it was on Kafka then (publish-before-delete violated)`,
        );
      }
      if (k) {
        // Deleted before it expired? The version current at the scan is the last one written before it.
        const current =
          [...k.versions].reverse().find((v) => v.writtenAtMs <= probe.scanStartedMs) ?? k.versions[0];
        if (current && (current.expiresAtMs === null || current.expiresAtMs > probe.scanStartedMs)) {
          // Only a violation if no later write explains the absence... none of ours deletes, so it is one.
          problems.push(
            `${probe.table} ${k.pk} [${k.category}]: absent at ${new Date(probe.scanStartedMs).toISOString()} (${probe.label}) while ${versionLabel(k, current, truth?.model.attribute ?? 'ttl')} was not yet expired`,
          );
        }
      }
    }
  }

  let effectiveCount = 0;
  for (const list of view.effective.values()) effectiveCount += list.length;
  return {
    ok: problems.length === 0,
    problems,
    summary: {
      keys: input.truths.reduce((n, t) => n + t.keys.size, 0),
      deletedVersions,
      keptKeys,
      effectiveRecords: effectiveCount,
      removes: view.counts.removes,
      duplicateRemoves: view.counts.duplicateRemoves,
      retractions: view.counts.retractions,
      probes: input.probes?.length ?? 0,
      probedAbsentKeys,
    },
  };
}
