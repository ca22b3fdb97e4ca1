import {
  AuditTally,
  auditKey,
  classifyDeletion,
  classifyPresent,
  readDeletions,
  type AuditRow,
  type AuditSummary,
  type DroppedTable,
  lossesInScope,
  type AuditLoss,
} from '../../archive-tools/audit';
import type { ArchiveStorage } from '../../archive/storage';
import { streamTopicFor } from '../../core/topics';
import { describeExpiryIndex } from '../../control/expiry-index';
import type { ArchivedTableState } from '../../control/settings-store';
import { ConflictError, NotFoundError } from '../../core/errors';
import type { TableTtlSettings } from '../../policy/settings';
import type { Item } from '../../policy/types';
import { findPresentExpired, type PresentExpired } from '../../scanner/present-expired';
import type { AttributeMap } from '../../schemas';
import type { CliContext } from '../kit/context';

/** What `ttlstream audit` does, loaded only when it runs: the archive pass, then the table pass. */

export interface AuditInput {
  table: string;
  fromMs: number;
  toMs: number;
  slaMs?: number;
  hashKeys: boolean;
  /** Scan the table even when it has an ACTIVE expiry index. */
  scan: boolean;
  /** Items per second the table pass reads at most. */
  readRate: number;
}

export interface AuditReport extends AuditSummary {
  table: string;
  from: string;
  to: string;
  slaMs: number | null;
  /** When the table was judged (items present at this instant). */
  evaluatedAt: string;
  /** False when the table no longer exists (dropped): its deletions come from the archive, no item can be present. */
  tableExists: boolean;
  /** When the table no longer exists: what bounds its drop, and which TTL settings its deletions were read with. */
  dropped: DroppedTable | null;
  /** How the table was read for items still present: not at all when it no longer exists. */
  tableReadVia: 'index' | 'scan' | 'none';
  /** Archived REMOVE records read (all that could belong to the window) and table items read. */
  archiveRecordsRead: number;
  tableItemsRead: number;
  /** Losses that may hold deletions of the window (archive-tools/audit/losses.ts); one not acknowledged is a breach. */
  losses: AuditLoss[];
}

export interface AuditHooks {
  /** Each row, as soon as it is known (deletions in catalog order, then the items still present). */
  onRow(row: AuditRow): void;
  /** Progress: archive data files read, then table items read. */
  onProgress(phase: 'archive' | 'table', done: number, total?: number): void;
}

/** Where the TTL settings of an audited table come from, and what is known of it when it was dropped. */
export interface AuditedTable {
  settings: TableTtlSettings;
  exists: boolean;
  /** The settings' record: who changed them last and when (ms), and whether TTL was on. */
  changedAt: number;
  changedBy: string;
  ttlEnabled: boolean;
}

/**
 * The settings an audit reads the table's deletions with: the live table's, or, for a table that no longer exists,
 * the last its settings row recorded (whether TTL was still on or not). Pure.
 */
export function auditedTable(table: string, state: ArchivedTableState, controlTable: string): AuditedTable {
  if (state.exists) {
    const d = state.description;
    if (!d.settings)
      throw new ConflictError(
        `TTL is ${d.status} on ${table}: audit needs the table's TTL settings to know each item's TTL instant`,
      );
    return {
      settings: d.settings,
      exists: true,
      changedAt: d.changedAt,
      changedBy: d.changedBy,
      ttlEnabled: d.status === 'ENABLED' || d.status === 'ENABLING',
    };
  }
  if (!state.last)
    throw new NotFoundError(
      `table ${table} does not exist, and the control table ${controlTable} holds no TTL settings for it: audit needs them to know each deletion's TTL instant (a dropped table's settings stay there)`,
    );
  const last = state.last;
  return {
    settings: last.settings,
    exists: false,
    changedAt: last.changedAt,
    changedBy: last.changedBy,
    ttlEnabled: last.enabled,
  };
}

/** DescribeTable, Scan or Query of a table that is gone (dropped while the audit ran). */
function tableGone(err: unknown): boolean {
  return (
    err instanceof NotFoundError || (err as { name?: unknown } | null)?.name === 'ResourceNotFoundException'
  );
}

export async function runAudit(
  ctx: CliContext,
  storage: ArchiveStorage,
  input: AuditInput,
  hooks: AuditHooks,
): Promise<AuditReport> {
  const audited = auditedTable(
    input.table,
    await ctx.settingsStore.describeEvenIfDropped(input.table),
    ctx.config.tables.control,
  );
  const keyOf = (keys: AttributeMap | Item, canonical?: string): string =>
    auditKey(input.table, keys, {
      hashKeys: input.hashKeys,
      ...(canonical !== undefined ? { canonical } : {}),
    });
  const tally = new AuditTally();
  const emit = (row: AuditRow): void => {
    tally.add(row);
    hooks.onRow(row);
  };
  const archive = await archivePass(storage, input, audited.settings, keyOf, emit, hooks);
  const losses = await lossesInScope(storage, {
    table: input.table,
    topic: streamTopicFor(ctx.config, input.table),
    fromMs: input.fromMs,
  });
  // The table is judged at the start of its own pass: the archive pass may have taken a while.
  const table = await tablePass(ctx, input, audited, hooks);
  for (const item of table.present.items) {
    const p = { key: keyOf(item.keys), expiresAtMs: item.expiresAtMs, held: item.held };
    emit(classifyPresent(p, table.judgedAtMs, input.slaMs));
  }
  const iso = (ms: number): string => new Date(ms).toISOString();
  const summary = tally.summary();
  return {
    table: input.table,
    from: iso(input.fromMs),
    to: iso(input.toMs),
    slaMs: input.slaMs ?? null,
    evaluatedAt: iso(table.judgedAtMs),
    tableExists: table.exists,
    dropped: table.exists
      ? null
      : {
          lastDeletionAt: archive.lastDeletionMs === null ? null : iso(archive.lastDeletionMs),
          settingsChangedAt: iso(audited.changedAt),
          settingsChangedBy: audited.changedBy,
          ttlEnabled: audited.ttlEnabled,
        },
    tableReadVia: table.via,
    archiveRecordsRead: archive.read,
    tableItemsRead: table.present.read,
    ...summary,
    losses,
    breach: summary.breach || losses.some((l) => !l.acknowledged),
  };
}

/** The archive's deletions of the window, each classified (and emitted); how many were read, and the last one. */
async function archivePass(
  storage: ArchiveStorage,
  input: AuditInput,
  settings: AuditedTable['settings'],
  keyOf: (keys: AttributeMap | Item, canonical?: string) => string,
  emit: (row: AuditRow) => void,
  hooks: AuditHooks,
): Promise<{ read: number; lastDeletionMs: number | null }> {
  const window = { fromMs: input.fromMs, toMs: input.toMs };
  let read = 0;
  let lastDeletionMs: number | null = null;
  for await (const deletion of readDeletions(storage, {
    table: input.table,
    settings,
    window,
    nowMs: Date.now(),
    keyOf,
    onProgress: (done, total) => hooks.onProgress('archive', done, total),
  })) {
    read++;
    if (!deletion.retracted) lastDeletionMs = Math.max(lastDeletionMs ?? 0, deletion.deletedAtMs);
    const row = classifyDeletion(deletion, window, input.slaMs);
    if (row) emit(row);
  }
  return { read, lastDeletionMs };
}

/** What the table pass found: the items still present, when they were judged, and how the table was read. */
interface TablePass {
  exists: boolean;
  via: AuditReport['tableReadVia'];
  judgedAtMs: number;
  present: { items: PresentExpired[]; read: number };
}

/** The window's expired items still in the table (through the expiry index when it is ACTIVE), if it exists. */
async function tablePass(
  ctx: CliContext,
  input: AuditInput,
  audited: AuditedTable,
  hooks: AuditHooks,
): Promise<TablePass> {
  let judgedAtMs = Date.now();
  const gone = (): TablePass => ({ exists: false, via: 'none', judgedAtMs, present: { items: [], read: 0 } });
  if (!audited.exists) return gone();
  const { settings } = audited;
  try {
    const indexActive =
      !input.scan &&
      settings.expiryIndex !== undefined &&
      (await describeExpiryIndex(ctx.ddb, ctx.config.tables.control, input.table)).status === 'ACTIVE';
    const via = indexActive ? 'index' : 'scan';
    judgedAtMs = Date.now();
    const present = await findPresentExpired(ctx.ddb, {
      table: input.table,
      settings,
      window: { fromMs: input.fromMs, toMs: input.toMs },
      nowMs: judgedAtMs,
      via,
      ratePerSec: input.readRate,
      onRead: (n) => hooks.onProgress('table', n),
    });
    return { exists: true, via, judgedAtMs, present };
  } catch (err) {
    // Dropped since the archive pass began: like a table found missing at the start.
    if (!tableGone(err)) throw err;
    return gone();
  }
}
