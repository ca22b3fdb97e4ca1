import {
  AuditTally,
  auditKey,
  classifyDeletion,
  classifyPresent,
  readDeletions,
  type AuditRow,
  type AuditSummary,
} from '../../archiver/audit';
import type { ArchiveStorage } from '../../archiver/storage';
import { describeExpiryIndex } from '../../control/expiry-index';
import { ConflictError } from '../../core/errors';
import type { Item } from '../../policy/types';
import { findPresentExpired } from '../../scanner/present-expired';
import type { AttributeMap } from '../../schemas';
import type { CliContext } from '../context';

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
  /** How the table was read for items still present. */
  tableReadVia: 'index' | 'scan';
  /** Archived REMOVE records read (all that could belong to the window) and table items read. */
  archiveRecordsRead: number;
  tableItemsRead: number;
}

export interface AuditHooks {
  /** Each row, as soon as it is known (deletions in catalog order, then the items still present). */
  onRow(row: AuditRow): void;
  /** Progress: archive data files read, then table items read. */
  onProgress(phase: 'archive' | 'table', done: number, total?: number): void;
}

export async function runAudit(
  ctx: CliContext,
  storage: ArchiveStorage,
  input: AuditInput,
  hooks: AuditHooks,
): Promise<AuditReport> {
  const described = await ctx.settingsStore.describe(input.table);
  const settings = described.settings;
  if (!settings)
    throw new ConflictError(
      `TTL is ${described.status} on ${input.table}: audit needs the table's TTL settings to know each item's TTL instant`,
    );
  const nowMs = Date.now();
  const window = { fromMs: input.fromMs, toMs: input.toMs };
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

  let archiveRecordsRead = 0;
  for await (const deletion of readDeletions(storage, {
    table: input.table,
    settings,
    window,
    nowMs,
    keyOf,
    onProgress: (done, total) => hooks.onProgress('archive', done, total),
  })) {
    archiveRecordsRead++;
    const row = classifyDeletion(deletion, window, input.slaMs);
    if (row) emit(row);
  }

  const indexActive =
    !input.scan &&
    settings.expiryIndex !== undefined &&
    (await describeExpiryIndex(ctx.ddb, ctx.config.tables.control, input.table)).status === 'ACTIVE';
  const via = indexActive ? 'index' : 'scan';
  // The table is judged at the start of its own pass: the archive pass may have taken a while.
  const judgedAtMs = Date.now();
  const present = await findPresentExpired(ctx.ddb, {
    table: input.table,
    settings,
    window,
    nowMs: judgedAtMs,
    via,
    ratePerSec: input.readRate,
    onRead: (n) => hooks.onProgress('table', n),
  });
  for (const item of present.items) {
    const p = { key: keyOf(item.keys), expiresAtMs: item.expiresAtMs, held: item.held };
    emit(classifyPresent(p, judgedAtMs, input.slaMs));
  }

  return {
    table: input.table,
    from: new Date(input.fromMs).toISOString(),
    to: new Date(input.toMs).toISOString(),
    slaMs: input.slaMs ?? null,
    evaluatedAt: new Date(judgedAtMs).toISOString(),
    tableReadVia: via,
    archiveRecordsRead,
    tableItemsRead: present.read,
    ...tally.summary(),
  };
}
