import fc from 'fast-check';
import { ConflictError, ValidationError } from '../../../core/errors';
import { TableTtlSettingsSchema, deleterOf, type TableTtlSettings } from '../../../policy/settings';
import { decodeRow, encodeRow } from '../../../control/settings-store';
import {
  CARRIED_SETTINGS,
  MODIFIED_MULTIPLE_TIMES,
  STREAM_RETENTION_MS,
  followsStream,
  carrySettings,
  describeRow,
  lastRecordedSettings,
  planMongoModify,
  planUpdate,
  statusOf,
  type PlanContext,
  type SettingsRow,
} from '../../../control/ttl-state';
import { cosmosTtl, dynamodbTtl, mongoTtl } from '../../support/ttl-settings';

const T0 = 1_735_689_600_000; // 2025-01-01T00:00:00Z
const PROP = 2000;
const ctx = (now: number, extra: Partial<PlanContext> = {}): PlanContext => ({
  table: 'orders',
  now,
  propagationMs: PROP,
  by: 'token#0',
  ...extra,
});
const row = (over: Partial<SettingsRow>): SettingsRow => ({
  table: 'orders',
  enabled: true,
  settings: dynamodbTtl('expiresAt'),
  changedAt: T0,
  changedBy: 'token#0',
  settlesAt: T0 + PROP,
  version: 1,
  ...over,
});

function written(plan: ReturnType<typeof planUpdate>): SettingsRow {
  if (plan.kind !== 'write') throw new Error(`expected a write, got ${plan.kind}`);
  return plan.row;
}

describe('statusOf (computed from the row and the clock)', () => {
  it('is DISABLED without a row', () => {
    expect(statusOf(null, T0)).toBe('DISABLED');
  });

  it('enabling: ENABLING strictly before settlesAt, ENABLED from settlesAt on', () => {
    const r = row({ enabled: true });
    expect(statusOf(r, T0)).toBe('ENABLING');
    expect(statusOf(r, T0 + PROP - 1)).toBe('ENABLING');
    expect(statusOf(r, T0 + PROP)).toBe('ENABLED');
    expect(statusOf(r, T0 + 10 * PROP)).toBe('ENABLED');
  });

  it('disabling: DISABLING strictly before settlesAt, DISABLED from settlesAt on', () => {
    const r = row({ enabled: false });
    expect(statusOf(r, T0 + PROP - 1)).toBe('DISABLING');
    expect(statusOf(r, T0 + PROP)).toBe('DISABLED');
  });
});

describe('describeRow', () => {
  it('describes a table that never had TTL as DISABLED with no settings', () => {
    expect(describeRow('t1x', null, T0)).toEqual({
      table: 't1x',
      status: 'DISABLED',
      settings: null,
      changedAt: 0,
      changedBy: '',
      statusSettlesAt: 0,
    });
  });

  it('names the settings while DISABLING and hides them once DISABLED (like DescribeTimeToLive)', () => {
    const r = row({ enabled: false });
    expect(describeRow('orders', r, T0 + 1)).toMatchObject({
      status: 'DISABLING',
      settings: dynamodbTtl('expiresAt'),
    });
    expect(describeRow('orders', r, T0 + PROP)).toMatchObject({ status: 'DISABLED', settings: null });
  });
});

describe('planUpdate', () => {
  it('enabling a table without a row starts ENABLING until now + propagation', () => {
    const r = written(
      planUpdate(
        null,
        { enabled: true, settings: dynamodbTtl('expiresAt') },
        ctx(T0, { tableCreatedAt: 42 }),
      ),
    );
    expect(r).toEqual({
      table: 'orders',
      enabled: true,
      settings: dynamodbTtl('expiresAt'),
      changedAt: T0,
      changedBy: 'token#0',
      settlesAt: T0 + PROP,
      version: 1,
      tableCreatedAt: 42,
    });
    expect(statusOf(r, T0)).toBe('ENABLING');
    expect(statusOf(r, T0 + PROP)).toBe('ENABLED');
  });

  it('with propagation 0 a change settles at once', () => {
    const r = written(
      planUpdate(null, { enabled: true, settings: dynamodbTtl('a') }, ctx(T0, { propagationMs: 0 })),
    );
    expect(statusOf(r, T0)).toBe('ENABLED');
  });

  it.each([
    ['ENABLING', row({ enabled: true })],
    ['DISABLING', row({ enabled: false })],
  ])('refuses any update while %s with DynamoDB’s message', (_status, current) => {
    for (const req of [
      { enabled: true, settings: dynamodbTtl('expiresAt') },
      { enabled: true, settings: dynamodbTtl('other') },
      { enabled: false },
    ]) {
      expect(() => planUpdate(current, req, ctx(T0 + 1))).toThrow(new ConflictError(MODIFIED_MULTIPLE_TIMES));
    }
  });

  it('refuses a different attribute while ENABLED, naming the current one', () => {
    const current = row({ enabled: true });
    const act = () => planUpdate(current, { enabled: true, settings: dynamodbTtl('other') }, ctx(T0 + PROP));
    expect(act).toThrow(ConflictError);
    expect(act).toThrow(
      'TimeToLive is active on a different AttributeName: current AttributeName is expiresAt; disable TTL first',
    );
  });

  it('refuses a different mode on the same attribute while ENABLED, naming the mode', () => {
    const current = row({ enabled: true, settings: cosmosTtl(60) });
    const act = () => planUpdate(current, { enabled: true, settings: dynamodbTtl('ttl') }, ctx(T0 + PROP));
    expect(act).toThrow('current AttributeName is ttl (mode cosmos)');
  });

  it('enabling again with identical settings while ENABLED is a no-op, whatever the key order', () => {
    const current = row({ enabled: true, settings: mongoTtl(60) });
    const reordered = {
      policy: { timeFormat: 'epoch-seconds', timeField: 'createdAt', expireAfterSeconds: 60, mode: 'mongo' },
    } as TableTtlSettings;
    expect(planUpdate(current, { enabled: true, settings: reordered }, ctx(T0 + PROP))).toEqual({
      kind: 'noop',
    });
  });

  it('changes parameters in place while ENABLED without a new propagation wait', () => {
    const current = row({ enabled: true, settings: mongoTtl(60), version: 4 });
    const r = written(
      planUpdate(current, { enabled: true, settings: mongoTtl(3600) }, ctx(T0 + 5 * PROP, { by: 'aws:AK' })),
    );
    expect(r).toMatchObject({
      settings: mongoTtl(3600),
      settlesAt: T0 + PROP,
      changedAt: T0 + 5 * PROP,
      changedBy: 'aws:AK',
      version: 5,
    });
    expect(statusOf(r, T0 + 5 * PROP)).toBe('ENABLED');

    const held = written(
      planUpdate(row({}), { enabled: true, settings: dynamodbTtl('expiresAt', 'hold') }, ctx(T0 + PROP)),
    );
    expect(held.settings).toEqual(dynamodbTtl('expiresAt', 'hold'));
    expect(statusOf(held, T0 + PROP)).toBe('ENABLED');
  });

  it('treats a different mongo timeFormat as a different attribute', () => {
    const current = row({ enabled: true, settings: mongoTtl(60) });
    const millis: TableTtlSettings = {
      policy: { mode: 'mongo', expireAfterSeconds: 60, timeField: 'createdAt', timeFormat: 'epoch-millis' },
    };
    expect(() => planUpdate(current, { enabled: true, settings: millis }, ctx(T0 + PROP))).toThrow(
      ConflictError,
    );
  });

  it('disabling while ENABLED starts DISABLING and keeps the settings for the description', () => {
    const r = written(planUpdate(row({ version: 2 }), { enabled: false }, ctx(T0 + PROP)));
    expect(r).toMatchObject({
      enabled: false,
      settings: dynamodbTtl('expiresAt'),
      settlesAt: T0 + 2 * PROP,
      version: 3,
    });
    expect(statusOf(r, T0 + PROP)).toBe('DISABLING');
    expect(statusOf(r, T0 + 2 * PROP)).toBe('DISABLED');
  });

  it('disabling names the active attribute when settings are given', () => {
    const current = row({});
    expect(() =>
      planUpdate(current, { enabled: false, settings: dynamodbTtl('other') }, ctx(T0 + PROP)),
    ).toThrow('current AttributeName is expiresAt');
    expect(
      planUpdate(current, { enabled: false, settings: dynamodbTtl('expiresAt') }, ctx(T0 + PROP)).kind,
    ).toBe('write');
  });

  it('disabling a DISABLED table (or one without a row) is a no-op', () => {
    expect(planUpdate(null, { enabled: false }, ctx(T0))).toEqual({ kind: 'noop' });
    expect(planUpdate(row({ enabled: false }), { enabled: false }, ctx(T0 + PROP))).toEqual({ kind: 'noop' });
  });

  it('re-enabling after DISABLED goes through ENABLING again, with any attribute', () => {
    const r = written(
      planUpdate(
        row({ enabled: false, version: 7 }),
        { enabled: true, settings: dynamodbTtl('other') },
        ctx(T0 + PROP),
      ),
    );
    expect(r).toMatchObject({
      enabled: true,
      settings: dynamodbTtl('other'),
      settlesAt: T0 + 2 * PROP,
      version: 8,
    });
  });

  it('enabling needs settings', () => {
    expect(() => planUpdate(null, { enabled: true }, ctx(T0))).toThrow(
      new ValidationError('settings: required when enabled is true'),
    );
  });

  it('property: a write is accepted exactly when the status has settled, and settles after the propagation delay', () => {
    const op = fc.record({
      enabled: fc.boolean(),
      attr: fc.constantFrom('a', 'b'),
      gapMs: fc.integer({ min: 0, max: 3 * PROP }),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        let current: SettingsRow | null = null;
        let now = T0;
        for (const o of ops) {
          now += o.gapMs;
          const before = statusOf(current, now);
          const req = { enabled: o.enabled, settings: dynamodbTtl(o.attr) };
          let plan;
          try {
            plan = planUpdate(current, req, ctx(now));
          } catch (err) {
            const settling = before === 'ENABLING' || before === 'DISABLING';
            const otherAttr =
              before === 'ENABLED' &&
              current?.settings?.policy.mode === 'dynamodb' &&
              current.settings.policy.attributeName !== o.attr;
            expect(err).toBeInstanceOf(ConflictError);
            expect(settling || otherAttr).toBe(true);
            continue;
          }
          expect(before === 'ENABLING' || before === 'DISABLING').toBe(false);
          if (plan.kind === 'noop') {
            expect(before).toBe(o.enabled ? 'ENABLED' : 'DISABLED');
            continue;
          }
          const next: SettingsRow = plan.row;
          expect(next.version).toBe((current?.version ?? 0) + 1);
          expect(statusOf(next, now + PROP)).toBe(o.enabled ? 'ENABLED' : 'DISABLED');
          if (next.settlesAt > now) expect(statusOf(next, now)).toBe(o.enabled ? 'ENABLING' : 'DISABLING');
          current = next;
        }
      }),
    );
  });
});

describe('planMongoModify (collMod)', () => {
  it('changes expireAfterSeconds in place on an ENABLED mongo table', () => {
    const current = row({ settings: mongoTtl(60), version: 3 });
    const plan = planMongoModify(current, 120, ctx(T0 + 10 * PROP));
    expect(plan).toEqual({
      kind: 'write',
      row: {
        ...current,
        settings: mongoTtl(120),
        changedAt: T0 + 10 * PROP,
        changedBy: 'token#0',
        version: 4,
      },
    });
  });

  it('accepts "off" and the same value is a no-op', () => {
    expect(planMongoModify(row({ settings: mongoTtl(60) }), 'off', ctx(T0 + PROP))).toMatchObject({
      kind: 'write',
      row: { settings: mongoTtl('off') },
    });
    expect(planMongoModify(row({ settings: mongoTtl(60) }), 60, ctx(T0 + PROP))).toEqual({ kind: 'noop' });
  });

  it('is allowed while ENABLING, which it does not extend', () => {
    const plan = planMongoModify(row({ settings: mongoTtl(60) }), 5, ctx(T0 + 1));
    expect(plan.kind === 'write' && plan.row.settlesAt).toBe(T0 + PROP);
  });

  it('refuses tables that are not enabled in mongo mode, and bad values', () => {
    expect(() => planMongoModify(null, 60, ctx(T0))).toThrow('TimeToLive is DISABLED on table orders');
    expect(() => planMongoModify(row({ enabled: false, settings: mongoTtl(60) }), 60, ctx(T0 + 1))).toThrow(
      ConflictError,
    );
    expect(() => planMongoModify(row({ settings: cosmosTtl(60) }), 60, ctx(T0 + PROP))).toThrow(
      'is in cosmos mode: expireAfterSeconds applies to mongo mode only',
    );
    expect(() => planMongoModify(row({ settings: mongoTtl(60) }), -1, ctx(T0 + PROP))).toThrow(
      ValidationError,
    );
    expect(() => planMongoModify(row({ settings: mongoTtl(60) }), 1.5, ctx(T0 + PROP))).toThrow(
      ValidationError,
    );
  });
});

describe('control-table row encoding', () => {
  it.each([
    ['dynamodb with hold', dynamodbTtl('expiresAt', 'hold')],
    ['cosmos with defaultTtl null', cosmosTtl(null)],
    ['mongo off', mongoTtl('off')],
  ])('round-trips %s', (_name, settings) => {
    const r = row({ settings, tableCreatedAt: 1_700_000_000_123, version: 9 });
    expect(decodeRow(encodeRow(r))).toEqual(r);
  });

  it('round-trips a row without settings or incarnation', () => {
    const r = row({ settings: null, enabled: false });
    expect(decodeRow(encodeRow(r))).toEqual(r);
  });

  it('refuses a corrupt row rather than guessing', () => {
    const item = encodeRow(row({}));
    expect(() => decodeRow({ ...item, settings: { S: '{"policy":{"mode":"nope"}}' } })).toThrow(
      'do not match the schema',
    );
    expect(() => decodeRow({ ...item, version: { S: 'x' } })).toThrow('version is missing or not a number');
  });
});

describe('carrySettings (what an update that cannot express them keeps)', () => {
  const full: TableTtlSettings = {
    ...dynamodbTtl('exp', 'hold'),
    archiveRetentionDays: 30,
    expiryIndex: { shards: 8 },
  };

  it('keeps the legal hold, retention and expiry index for the same policy', () => {
    expect(carrySettings(full, dynamodbTtl('exp'), CARRIED_SETTINGS)).toEqual(full);
  });

  it('keeps only the archive retention when the attribute or mode changes', () => {
    expect(carrySettings(full, dynamodbTtl('other'), CARRIED_SETTINGS)).toEqual({
      ...dynamodbTtl('other'),
      archiveRetentionDays: 30,
    });
    expect(carrySettings(full, mongoTtl(60), CARRIED_SETTINGS)).toEqual({
      ...mongoTtl(60),
      archiveRetentionDays: 30,
    });
  });

  it('never overrides what the request says, and carries only what it is asked to', () => {
    expect(carrySettings(full, dynamodbTtl('exp', 'other-hold'), CARRIED_SETTINGS).legalHoldAttribute).toBe(
      'other-hold',
    );
    expect(carrySettings(full, dynamodbTtl('exp'), ['archiveRetentionDays'])).toEqual({
      ...dynamodbTtl('exp'),
      archiveRetentionDays: 30,
    });
    expect(carrySettings(full, dynamodbTtl('exp'))).toEqual(dynamodbTtl('exp'));
    expect(carrySettings(null, dynamodbTtl('exp'), CARRIED_SETTINGS)).toEqual(dynamodbTtl('exp'));
  });

  it('planUpdate re-enabling a DISABLED table carries from the settings the row kept', () => {
    const disabled = row({ enabled: false, settings: full, settlesAt: T0 });
    const plan = planUpdate(
      disabled,
      { enabled: true, settings: dynamodbTtl('exp'), carry: CARRIED_SETTINGS },
      ctx(T0 + 10 * PROP),
      'dynamodb',
    );
    expect(written(plan).settings).toEqual(full);
    const replaced = planUpdate(
      disabled,
      { enabled: true, settings: dynamodbTtl('exp') },
      ctx(T0 + 10 * PROP),
    );
    expect(written(replaced).settings).toEqual(dynamodbTtl('exp'));
  });
});

describe('lastRecordedSettings (a dropped table: the settings its archived deletions were decided by)', () => {
  it('are the settings the row holds, enabled or not, with who changed them and when', () => {
    const on = row({ settings: dynamodbTtl('exp', 'hold'), tableCreatedAt: T0 - 5000 });
    expect(lastRecordedSettings(on)).toEqual({
      settings: dynamodbTtl('exp', 'hold'),
      enabled: true,
      changedAt: T0,
      changedBy: 'token#0',
      tableCreatedAt: T0 - 5000,
    });
    // TTL disabled before the table was dropped: the row keeps the settings last enabled.
    const off = written(planUpdate(on, { enabled: false }, ctx(T0 + 10 * PROP, { by: 'ops' })));
    expect(off.enabled).toBe(false);
    expect(describeRow('orders', off, T0 + 100 * PROP).settings).toBeNull();
    expect(lastRecordedSettings(off)).toMatchObject({
      settings: dynamodbTtl('exp', 'hold'),
      enabled: false,
      changedAt: T0 + 10 * PROP,
      changedBy: 'ops',
    });
    expect(lastRecordedSettings(row({ tableCreatedAt: undefined }))).not.toHaveProperty('tableCreatedAt');
  });

  it('are null without a row, or with a row that never held settings', () => {
    expect(lastRecordedSettings(null)).toBeNull();
    expect(lastRecordedSettings(row({ enabled: false, settings: null }))).toBeNull();
  });
});

describe("the deleter: ttlstream's, or DynamoDB's own TTL followed from the table's stream", () => {
  const dynamo: TableTtlSettings = { ...dynamodbTtl('exp'), deleter: 'dynamodb' };

  it('deleter dynamodb needs mode dynamodb, and refuses a legal hold and an expiry index it cannot honour', () => {
    expect(TableTtlSettingsSchema.safeParse(dynamo).success).toBe(true);
    const issue = (s: unknown): string => {
      const r = TableTtlSettingsSchema.safeParse(s);
      return r.success ? '' : `${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message}`;
    };
    expect(issue({ ...mongoTtl(60), deleter: 'dynamodb' })).toMatch(
      /^policy\.mode: .*needs mode dynamodb, not mongo/,
    );
    expect(issue({ ...dynamodbTtl('exp', 'hold'), deleter: 'dynamodb' })).toMatch(
      /^legalHoldAttribute: .*legal hold/,
    );
    expect(issue({ ...dynamo, expiryIndex: { shards: 4 } })).toMatch(/^expiryIndex: /);
    expect(deleterOf(dynamodbTtl('exp'))).toBe('ttlstream');
  });

  it('is carried like the legal hold (same policy only), and a carried combination that cannot work is refused', () => {
    expect(carrySettings(dynamo, dynamodbTtl('exp'), CARRIED_SETTINGS)).toEqual(dynamo);
    expect(carrySettings(dynamo, dynamodbTtl('other'), CARRIED_SETTINGS)).toEqual(dynamodbTtl('other'));
    expect(() => carrySettings(dynamo, dynamodbTtl('exp', 'hold'), CARRIED_SETTINGS)).toThrow(
      ValidationError,
    );
  });

  it('the stream is followed while DynamoDB deletes, and 24 h more after TTL is disabled or the deleter changes', () => {
    const on = row({ settings: dynamo });
    expect(followsStream(on, T0 + 10 * PROP)).toBe(true);
    expect(followsStream(row({}), T0 + 10 * PROP)).toBe(false);
    const disabled = written(planUpdate(on, { enabled: false }, ctx(T0 + 10 * PROP)));
    expect(disabled.streamFollowUntil).toBe(T0 + 10 * PROP + STREAM_RETENTION_MS);
    expect(followsStream(disabled, T0 + 10 * PROP + STREAM_RETENTION_MS - 1)).toBe(true);
    expect(followsStream(disabled, T0 + 10 * PROP + STREAM_RETENTION_MS)).toBe(false);
    const handedBack = written(
      planUpdate(on, { enabled: true, settings: dynamodbTtl('exp') }, ctx(T0 + 10 * PROP)),
    );
    expect(handedBack.settings).toEqual(dynamodbTtl('exp'));
    expect(handedBack.streamFollowUntil).toBe(T0 + 10 * PROP + STREAM_RETENTION_MS);
    expect(decodeRow(encodeRow(handedBack))).toEqual(handedBack);
  });
});
