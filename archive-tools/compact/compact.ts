import { LeaseLostError, ValidationError } from '../../core/errors';
import type { CompressionLevels } from '../../archive/format/types';
import { retentionCutoffMs } from '../../archive/retention/policy';
import { listWithIndexes } from '../../archive/storage/key-index';
import {
  KeyIndexSchema,
  compactListingPrefix,
  parseArchiveJson,
  tablePrefix,
  type DataFormat,
} from '../../archive/storage/layout';
import { decodeSegment } from '../../archive/storage/safe-segment';
import type { ArchiveStorage } from '../../archive/storage/types';
import { buildDay } from './day';
import { tryLock, type HeldLock, type LockRecord } from '../../archive/lock';
import { ListingSummary, planCompaction, type DayBuild, type HourUnit } from './plan';
import { compactHour, type UnitResult } from './unit';

/**
 * `archive compact` and the archivers' schedule (docs/decisions/0037): one listing of the data area, then per
 * table, under its lock, each closed hour that holds a roll's file compacted (unit.ts), then each day whose hours
 * are all compacted given its key index (day.ts). A unit that fails is reported and the run goes on; a table whose
 * lock someone else holds is left for the next run; a stop (signal) or someone waiting for the lock ends a table
 * between two hours.
 */

export interface CompactOptions {
  /** Only this table. */
  table?: string;
  /** Only hours overlapping [fromMs, toMs). */
  fromMs?: number;
  toMs?: number;
  /** `archive.compactAfterMs`: an hour is compacted once it ended this long ago. */
  afterMs: number;
  /** `archive.compactTargetBytes`. */
  targetBytes: number;
  /** `archive.compactMaxRows`: rows a new file holds at most (its rows are in memory while it is built). */
  maxRows: number;
  /** `archive.format`: the format the new files are written in. */
  format: DataFormat;
  levels: CompressionLevels;
  /** A table's archive retention (hours about to be purged are left to the purge), or null: kept for ever. */
  retentionDays: (table: string) => Promise<number | null>;
  actor: string;
  dryRun?: boolean;
  nowMs?: number;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
  /** The table lock's lease (tests shorten it). */
  leaseMs?: number;
}

export interface PlannedUnit {
  table: string;
  hour: string;
  /** Roll files in the hour, as listed. */
  rolls: number;
}

export interface CompactResult {
  dryRun: boolean;
  /** The hours to compact (all of them in a dry run). */
  planned: PlannedUnit[];
  units: UnitResult[];
  /** Days given a key index (or that would be). */
  days: Array<{ table: string; date: string }>;
  failed: Array<{ table: string; hour: string; error: string }>;
  /** Tables left for the next run because another process held their lock. */
  busy: Array<{ table: string; holder: string | null }>;
  /** Start of the oldest closed hour still holding a roll's file, when the run began (null: none). */
  oldestPendingMs: number | null;
  stopped: boolean;
  totals: {
    inputs: number;
    outputs: number;
    bytesIn: number;
    bytesOut: number;
    rowsIn: number;
    rowsOut: number;
  };
}

/** The table a folder segment names: the segment itself decoded, else (a shortened one) a key index of it says. */
async function tableOfSegment(storage: ArchiveStorage, segment: string): Promise<string> {
  const decoded = decodeSegment(segment);
  if (decoded !== null) return decoded;
  for await (const p of listWithIndexes(storage, `table=${segment}/`)) {
    if (!p.isIndex) continue;
    const body = await storage.get(p.path);
    if (body) return parseArchiveJson(KeyIndexSchema, body, p.path).table;
  }
  throw new ValidationError(`table=${segment}: no key index says which table it is`);
}

async function plan(
  storage: ArchiveStorage,
  options: CompactOptions,
  now: number,
): Promise<ReturnType<typeof planCompaction>> {
  const summary = new ListingSummary();
  const prefix = options.table !== undefined ? tablePrefix(options.table) : 'table=';
  for await (const p of listWithIndexes(storage, prefix)) summary.add(p);
  summary.finish();
  for await (const p of storage.list(compactListingPrefix(prefix))) summary.addCompactPath(p);
  const cutoffs = new Map<string, number | null>();
  for (const h of summary.hours) {
    if (cutoffs.has(h.tableSegment)) continue;
    const table = decodeSegment(h.tableSegment);
    const days = table === null ? null : await options.retentionDays(table);
    cutoffs.set(h.tableSegment, days === null ? null : retentionCutoffMs(now, days));
  }
  return planCompaction(summary, {
    nowMs: now,
    afterMs: options.afterMs,
    ...(options.fromMs !== undefined ? { fromMs: options.fromMs } : {}),
    ...(options.toMs !== undefined ? { toMs: options.toMs } : {}),
    cutoffMs: (segment) => cutoffs.get(segment) ?? null,
  });
}

export async function compactArchive(
  storage: ArchiveStorage,
  options: CompactOptions,
): Promise<CompactResult> {
  const now = options.nowMs ?? Date.now();
  const p = await plan(storage, options, now);
  const result: CompactResult = {
    dryRun: options.dryRun ?? false,
    planned: [],
    units: [],
    days: [],
    failed: [],
    busy: [],
    oldestPendingMs: p.oldestPendingMs,
    stopped: false,
    totals: { inputs: 0, outputs: 0, bytesIn: 0, bytesOut: 0, rowsIn: 0, rowsOut: 0 },
  };
  const bySegment = new Map<string, { units: HourUnit[]; days: DayBuild[] }>();
  for (const u of p.units) {
    const t = bySegment.get(u.tableSegment) ?? { units: [], days: [] };
    t.units.push(u);
    bySegment.set(u.tableSegment, t);
  }
  for (const d of p.days) {
    const t = bySegment.get(d.tableSegment) ?? { units: [], days: [] };
    t.days.push(d);
    bySegment.set(d.tableSegment, t);
  }
  const tables = new Map<string, string>();
  for (const segment of bySegment.keys()) tables.set(segment, await tableOfSegment(storage, segment));
  for (const [segment, work] of bySegment)
    for (const u of work.units)
      result.planned.push({ table: tables.get(segment) as string, hour: u.hour, rolls: u.rolls });
  if (result.dryRun) {
    for (const [segment, work] of bySegment)
      for (const d of work.days) result.days.push({ table: tables.get(segment) as string, date: d.date });
    return result;
  }
  let done = 0;
  const total = p.units.length;
  for (const [segment, work] of bySegment) {
    if (options.signal?.aborted) {
      result.stopped = true;
      break;
    }
    const table = tables.get(segment) as string;
    const got = await tryLock(storage, {
      table,
      purpose: 'compact',
      ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    });
    if ('holder' in got) {
      result.busy.push({ table, holder: holderName(got.holder) });
      done += work.units.length;
      continue;
    }
    try {
      done = await compactTable(storage, table, work, got.held, options, result, done, total);
    } finally {
      await got.held.release().catch(() => undefined);
    }
  }
  return result;
}

function holderName(record: LockRecord | null): string | null {
  return record ? `${record.owner} (${record.purpose})` : null;
}

async function compactTable(
  storage: ArchiveStorage,
  table: string,
  work: { units: HourUnit[]; days: DayBuild[] },
  lock: HeldLock,
  options: CompactOptions,
  result: CompactResult,
  done: number,
  total: number,
): Promise<number> {
  const unitOptions = {
    format: options.format,
    targetBytes: options.targetBytes,
    maxRows: options.maxRows,
    levels: options.levels,
    actor: options.actor,
    now: () => Date.now(),
    lock,
  };
  for (const [n, u] of work.units.entries()) {
    if (options.signal?.aborted) {
      result.stopped = true;
      return done;
    }
    // An erasure waiting for the table: it goes first, the rest of the table waits for the next run.
    if (await lock.waited()) return done + work.units.length - n;
    try {
      const r = await compactHour(storage, { hour: u.hour, table, startMs: u.startMs }, unitOptions);
      result.units.push(r);
      const t = result.totals;
      t.inputs += r.inputs;
      t.outputs += r.outputs;
      t.bytesIn += r.bytesIn;
      t.bytesOut += r.bytesOut;
      t.rowsIn += r.rowsIn;
      t.rowsOut += r.rowsOut;
    } catch (err) {
      result.failed.push({ table, hour: u.hour, error: (err as Error).message });
      if (err instanceof LeaseLostError) return done + work.units.length - n;
    }
    options.onProgress?.(++done, total);
  }
  // The days its hours completed are planned again from a fresh listing of the table.
  const days =
    work.units.length === 0 ? work.days : (await plan(storage, { ...options, table }, Date.now())).days;
  for (const d of days) {
    if (options.signal?.aborted) {
      result.stopped = true;
      return done;
    }
    try {
      if (
        await buildDay(storage, { table, date: d.date, files: d.files }, Date.now(), () => lock.assertValid())
      )
        result.days.push({ table, date: d.date });
    } catch (err) {
      result.failed.push({ table, hour: `date=${d.date}`, error: (err as Error).message });
    }
  }
  return done;
}
