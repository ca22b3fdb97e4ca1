import { ConflictError, ValidationError } from '../core/errors';
import {
  MongoTtlSchema,
  TableTtlSettingsSchema,
  deleterOf,
  type TableTtlSettings,
  type TtlPolicy,
  type TtlStatus,
} from '../policy/settings';
import type { ExpiryIndexStatus } from './expiry-index';

/**
 * The TTL state machine of one table, as pure functions of the stored row and the clock. Status is
 * never stored: it is computed on read from `enabled` and `settlesAt`, so no background job has to
 * flip ENABLING to ENABLED and every process agrees on the status at a given instant.
 */

/** One `settings#<table>` row of the control table, decoded. */
export interface SettingsRow {
  table: string;
  enabled: boolean;
  /** The settings last enabled; kept while DISABLING so the description can still name them. */
  settings: TableTtlSettings | null;
  /** Last change of any kind (ms). */
  changedAt: number;
  changedBy: string;
  /** When the last ENABLED/DISABLED flip settles (ms); in-place parameter changes leave it alone. */
  settlesAt: number;
  /** Bumped on every write; the optimistic-concurrency token. */
  version: number;
  /** CreationDateTime (ms) of the table the row was written for: a re-created table starts DISABLED. */
  tableCreatedAt?: number;
  /**
   * Until when (ms) the streams role still follows the table's stream after DynamoDB's TTL stopped being its deleter
   * (TTL disabled, or the deleter changed): the deletions DynamoDB made before are still on the stream for its 24-hour
   * retention, and are published all the same.
   */
  streamFollowUntil?: number;
}

/** DynamoDB Streams keeps a record for 24 hours: how long a stream must still be read after its table is let go. */
export const STREAM_RETENTION_MS = 24 * 3600 * 1000;

/**
 * Whether the streams role follows the table now: DynamoDB's own TTL deletes its items (its settings say deleter
 * dynamodb and TTL is on, settling or not: DynamoDB may delete from the first moment), or did so less than a stream
 * retention ago.
 */
export function followsStream(row: SettingsRow, now: number): boolean {
  if (row.enabled && row.settings && deleterOf(row.settings) === 'dynamodb') return true;
  return row.streamFollowUntil !== undefined && row.streamFollowUntil > now;
}

/** `next` as written: when it lets go of a table DynamoDB's TTL was deleting, the stream is followed 24 h more. */
function withStreamFollow(current: SettingsRow | null, next: SettingsRow, now: number): SettingsRow {
  const was = current?.enabled === true && current.settings && deleterOf(current.settings) === 'dynamodb';
  const is = next.enabled && next.settings && deleterOf(next.settings) === 'dynamodb';
  return was && !is ? { ...next, streamFollowUntil: now + STREAM_RETENTION_MS } : next;
}

export interface TtlDescription {
  table: string;
  status: TtlStatus;
  settings: TableTtlSettings | null;
  /** ms; 0 when TTL was never configured. */
  changedAt: number;
  changedBy: string;
  /** ms: when ENABLING/DISABLING ends (in the past once settled; 0 when never configured). */
  statusSettlesAt: number;
  /** With `settings.expiryIndex`: the index's life cycle (CREATING → BACKFILLING → ACTIVE), see control/expiry-index.ts. */
  expiryIndex?: { status: ExpiryIndexStatus; shards: number; backfilledAt?: number };
}

export interface UpdateRequest {
  enabled: boolean;
  settings?: TableTtlSettings;
  /**
   * Table-level settings the caller cannot express and must not erase: taken from the stored row (its last
   * settings, kept while TTL is disabled) when `settings` lacks them. The AWS-compatible endpoint knows only the
   * attribute; `ttl update`'s flag form has no flag for the archive retention.
   */
  carry?: readonly CarriedSetting[];
}

/** Settings of a table that are not its TTL policy. */
export type CarriedSetting = 'legalHoldAttribute' | 'archiveRetentionDays' | 'expiryIndex' | 'deleter';
export const CARRIED_SETTINGS: readonly CarriedSetting[] = [
  'legalHoldAttribute',
  'archiveRetentionDays',
  'expiryIndex',
  'deleter',
];

/**
 * `requested` plus what `carry` names from `previous`. The archive retention concerns the archive, so it is kept
 * whatever the policy; the legal hold, the expiry index (whose sort key is the TTL attribute in dynamodb mode) and the
 * deleter only while the policy keeps its mode and attribute. A combination the carried settings make invalid (a
 * legal hold asked for on a table DynamoDB's TTL deletes) is refused as if it had been asked for.
 */
export function carrySettings(
  previous: TableTtlSettings | null | undefined,
  requested: TableTtlSettings,
  carry: readonly CarriedSetting[] = [],
): TableTtlSettings {
  if (!previous || carry.length === 0) return requested;
  const samePolicy = sameIdentity(previous, requested);
  const out: TableTtlSettings = { ...requested };
  for (const key of carry) {
    if (requested[key] !== undefined || previous[key] === undefined) continue;
    if (key !== 'archiveRetentionDays' && !samePolicy) continue;
    Object.assign(out, { [key]: previous[key] });
  }
  const checked = TableTtlSettingsSchema.safeParse(out);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new ValidationError(`settings.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return checked.data;
}

export interface PlanContext {
  table: string;
  now: number;
  propagationMs: number;
  by: string;
  tableCreatedAt?: number;
}

export type Plan = { kind: 'noop' } | { kind: 'write'; row: SettingsRow };

/**
 * How an update that changes nothing, or names another attribute, is answered:
 * - `ttlstream` (REST, CLI): enabling the same settings or disabling a disabled table is a no-op
 *   success; a different attribute is refused with a hint to disable first.
 * - `dynamodb` (the AWS-compatible endpoint): DynamoDB's ValidationExceptions, word for word:
 *   `TimeToLive is already enabled`, `TimeToLive is already disabled`, and
 *   `TimeToLive is active on a different AttributeName: current AttributeName is X`.
 */
export type UpdateSemantics = 'ttlstream' | 'dynamodb';

export const ALREADY_ENABLED = 'TimeToLive is already enabled';
export const ALREADY_DISABLED = 'TimeToLive is already disabled';

/** DynamoDB's own wording, so clients that match on it behave the same against ttlstream. */
export const MODIFIED_MULTIPLE_TIMES =
  'Time to live has been modified multiple times within a fixed interval';

export function statusOf(row: SettingsRow | null, now: number): TtlStatus {
  if (!row) return 'DISABLED';
  const settling = now < row.settlesAt;
  if (row.enabled) return settling ? 'ENABLING' : 'ENABLED';
  return settling ? 'DISABLING' : 'DISABLED';
}

export function describeRow(table: string, row: SettingsRow | null, now: number): TtlDescription {
  if (!row)
    return { table, status: 'DISABLED', settings: null, changedAt: 0, changedBy: '', statusSettlesAt: 0 };
  const status = statusOf(row, now);
  return {
    table,
    status,
    // Like DescribeTimeToLive, a DISABLED table names no attribute.
    settings: status === 'DISABLED' ? null : row.settings,
    changedAt: row.changedAt,
    changedBy: row.changedBy,
    statusSettlesAt: row.settlesAt,
  };
}

/** What a table's settings row last recorded: the settings its archived deletions were decided by. */
export interface LastRecordedSettings {
  settings: TableTtlSettings;
  /** Whether TTL was on when the row was last written. */
  enabled: boolean;
  /** ms */
  changedAt: number;
  changedBy: string;
  /** CreationDateTime (ms) of the table the row was written for, when recorded. */
  tableCreatedAt?: number;
}

/**
 * The settings of a table that no longer exists. Nothing removes a settings row when its table is dropped, and the
 * row keeps the settings last enabled after TTL is disabled, so they are the policy its archived deletions were
 * decided by (unless they changed in between, as for a live table). Null when the row holds no settings: TTL was
 * never enabled on the table, and ttlstream deleted nothing of it.
 */
export function lastRecordedSettings(row: SettingsRow | null): LastRecordedSettings | null {
  if (!row?.settings) return null;
  return {
    settings: row.settings,
    enabled: row.enabled,
    changedAt: row.changedAt,
    changedBy: row.changedBy,
    ...(row.tableCreatedAt !== undefined ? { tableCreatedAt: row.tableCreatedAt } : {}),
  };
}

/**
 * The attribute that carries each mode's expiry: what DescribeTimeToLive reports as AttributeName.
 */
export function primaryAttribute(policy: TtlPolicy): string {
  switch (policy.mode) {
    case 'dynamodb':
      return policy.attributeName;
    case 'cosmos':
      return policy.ttlAttribute;
    case 'mongo':
      return policy.timeField;
  }
}

/**
 * What decides which items a policy reads: mode and attribute names (and how mongo reads its time
 * field). Two settings with the same identity differ only in parameters that can change in place.
 */
function identityOf(policy: TtlPolicy): string {
  switch (policy.mode) {
    case 'dynamodb':
      return stableStringify(['dynamodb', policy.attributeName]);
    case 'cosmos':
      return stableStringify(['cosmos', policy.ttlAttribute, policy.lastWriteAttribute]);
    case 'mongo':
      return stableStringify(['mongo', policy.timeField, policy.timeFormat]);
  }
}

export function sameIdentity(a: TableTtlSettings, b: TableTtlSettings): boolean {
  return identityOf(a.policy) === identityOf(b.policy);
}

export function sameSettings(a: TableTtlSettings, b: TableTtlSettings): boolean {
  return stableStringify(a) === stableStringify(b);
}

function differentAttribute(
  current: TableTtlSettings,
  requested: TableTtlSettings,
  semantics: UpdateSemantics,
): ConflictError {
  const attr = primaryAttribute(current.policy);
  const message = `TimeToLive is active on a different AttributeName: current AttributeName is ${attr}`;
  if (semantics === 'dynamodb') return new ConflictError(message);
  const mode = current.policy.mode === requested.policy.mode ? '' : ` (mode ${current.policy.mode})`;
  return new ConflictError(`${message}${mode}; disable TTL first`);
}

/**
 * Decide what an UpdateTimeToLive-like request does to the row. Throws ConflictError or
 * ValidationError; never touches I/O.
 *
 * - ENABLING/DISABLING: every update is refused (DynamoDB's "modified multiple times").
 * - enable while DISABLED: ENABLING until now + propagationMs.
 * - enable while ENABLED: identical settings → no-op; another mode or attribute → refused; same
 *   mode and attributes with other parameters (mongo expireAfterSeconds, cosmos defaultTtl, legal
 *   hold) → changed in place without a propagation wait, as collMod and Cosmos DB do.
 * - disable while ENABLED: DISABLING until now + propagationMs; if settings are given, their
 *   attribute must be the active one. Disable while DISABLED → no-op.
 */
export function planUpdate(
  current: SettingsRow | null,
  req: UpdateRequest,
  ctx: PlanContext,
  semantics: UpdateSemantics = 'ttlstream',
): Plan {
  const status = statusOf(current, ctx.now);
  if (status === 'ENABLING' || status === 'DISABLING') throw new ConflictError(MODIFIED_MULTIPLE_TIMES);
  const version = (current?.version ?? 0) + 1;
  const incarnation = ctx.tableCreatedAt !== undefined ? { tableCreatedAt: ctx.tableCreatedAt } : {};

  if (req.enabled) {
    if (!req.settings) throw new ValidationError('settings: required when enabled is true');
    const settings = carrySettings(current?.settings, req.settings, req.carry);
    if (status === 'ENABLED' && current?.settings) {
      if (!sameIdentity(current.settings, settings))
        throw differentAttribute(current.settings, settings, semantics);
      if (semantics === 'dynamodb') throw new ValidationError(ALREADY_ENABLED);
      if (sameSettings(current.settings, settings)) return { kind: 'noop' };
      const row = { ...current, settings, changedAt: ctx.now, changedBy: ctx.by, version, ...incarnation };
      return { kind: 'write', row: withStreamFollow(current, row, ctx.now) };
    }
    const row: SettingsRow = {
      table: ctx.table,
      enabled: true,
      settings,
      changedAt: ctx.now,
      changedBy: ctx.by,
      settlesAt: ctx.now + ctx.propagationMs,
      version,
      ...incarnation,
      ...(current?.streamFollowUntil !== undefined ? { streamFollowUntil: current.streamFollowUntil } : {}),
    };
    return { kind: 'write', row: withStreamFollow(current, row, ctx.now) };
  }

  if (status === 'DISABLED' || !current) {
    if (semantics === 'dynamodb') throw new ValidationError(ALREADY_DISABLED);
    return { kind: 'noop' };
  }
  if (req.settings && current.settings) {
    const active = primaryAttribute(current.settings.policy);
    if (primaryAttribute(req.settings.policy) !== active)
      throw differentAttribute(current.settings, req.settings, semantics);
  }
  const row: SettingsRow = {
    ...current,
    enabled: false,
    changedAt: ctx.now,
    changedBy: ctx.by,
    settlesAt: ctx.now + ctx.propagationMs,
    version,
    ...incarnation,
  };
  return { kind: 'write', row: withStreamFollow(current, row, ctx.now) };
}

const ExpireAfterSecondsSchema = MongoTtlSchema.shape.expireAfterSeconds;

/**
 * collMod-like change of a mongo-mode table's expireAfterSeconds (a number or "off"): applies in
 * place, with no propagation wait, while TTL is enabled (ENABLING or ENABLED) in mongo mode.
 */
export function planMongoModify(
  current: SettingsRow | null,
  expireAfterSeconds: number | 'off',
  ctx: PlanContext,
): Plan {
  const parsed = ExpireAfterSecondsSchema.safeParse(expireAfterSeconds);
  if (!parsed.success) {
    throw new ValidationError(
      `expireAfterSeconds: expected a non-negative integer or "off", got ${JSON.stringify(expireAfterSeconds)}`,
    );
  }
  const status = statusOf(current, ctx.now);
  if (!current || !current.enabled || !current.settings) {
    throw new ConflictError(
      `TimeToLive is ${status} on table ${ctx.table}: enable it in mongo mode (with a timeField) first`,
    );
  }
  const policy = current.settings.policy;
  if (policy.mode !== 'mongo') {
    throw new ConflictError(
      `TimeToLive on table ${ctx.table} is in ${policy.mode} mode: expireAfterSeconds applies to mongo mode only`,
    );
  }
  if (policy.expireAfterSeconds === parsed.data) return { kind: 'noop' };
  return {
    kind: 'write',
    row: {
      ...current,
      settings: { ...current.settings, policy: { ...policy, expireAfterSeconds: parsed.data } },
      changedAt: ctx.now,
      changedBy: ctx.by,
      version: current.version + 1,
    },
  };
}

/** JSON with object keys sorted, so equal settings compare equal whatever order they were built in. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
