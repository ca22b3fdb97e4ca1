import { ValidationError } from '../../../../core/errors';
import {
  AUDIT_COLUMNS,
  AuditTally,
  auditKey,
  auditRecord,
  classifyDeletion,
  classifyPresent,
  droppedSettingsNote,
  droppedTableNote,
  percentile,
  type ArchivedDeletion,
} from '../../../../archive-tools/audit';
import { keyDigest } from '../../../../schemas';

const WINDOW = { fromMs: 1_000_000, toMs: 2_000_000 };

function deletion(over: Partial<ArchivedDeletion> = {}): ArchivedDeletion {
  return {
    key: '{"pk":{"S":"a"}}',
    ttlAtMs: 1_500_000,
    deletedAtMs: 1_501_000,
    publishedAtMs: 1_501_250,
    eventID: 'e1',
    topic: 'ttlstream.remove',
    partition: 2,
    offset: '17',
    file: 'table=t/date=1970-01-01/hour=00/x.avro',
    row: 3,
    retracted: false,
    deletedBy: 'ttlstream',
    ...over,
  };
}

describe('percentile (nearest rank)', () => {
  it('is the smallest value with at least p % of the values at or below it', () => {
    const v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(v, 50)).toBe(5);
    expect(percentile(v, 90)).toBe(9);
    expect(percentile(v, 99)).toBe(10);
    expect(percentile(v, 100)).toBe(10);
    expect(percentile([42], 50)).toBe(42);
    expect(percentile([42], 99)).toBe(42);
    // 200 values 1..200: p99 is the 198th.
    expect(
      percentile(
        Array.from({ length: 200 }, (_, i) => i + 1),
        99,
      ),
    ).toBe(198);
  });

  it('refuses no values and p outside (0, 100]', () => {
    expect(() => percentile([], 50)).toThrow(ValidationError);
    expect(() => percentile([1], 0)).toThrow(ValidationError);
    expect(() => percentile([1], 101)).toThrow(ValidationError);
  });
});

describe('classifyDeletion', () => {
  it('lag is publish time minus TTL instant; later than the SLA is late, at the SLA is not', () => {
    expect(classifyDeletion(deletion(), WINDOW)).toMatchObject({ status: 'deleted', lagMs: 1250 });
    expect(classifyDeletion(deletion(), WINDOW, 1250)).toMatchObject({ status: 'deleted' });
    expect(classifyDeletion(deletion(), WINDOW, 1249)).toMatchObject({ status: 'late', lagMs: 1250 });
  });

  it('keeps every field of the deletion', () => {
    const d = deletion();
    expect(classifyDeletion(d, WINDOW)).toEqual({
      status: 'deleted',
      key: d.key,
      ttlAtMs: d.ttlAtMs,
      deletedAtMs: d.deletedAtMs,
      publishedAtMs: d.publishedAtMs,
      lagMs: 1250,
      eventID: 'e1',
      topic: 'ttlstream.remove',
      partition: 2,
      offset: '17',
      file: d.file,
      row: 3,
      deletedBy: 'ttlstream',
    });
  });

  it('places by TTL instant: from inclusive, to exclusive, whatever the deletion time', () => {
    expect(classifyDeletion(deletion({ ttlAtMs: WINDOW.fromMs }), WINDOW)).not.toBeNull();
    expect(classifyDeletion(deletion({ ttlAtMs: WINDOW.fromMs - 1 }), WINDOW)).toBeNull();
    expect(classifyDeletion(deletion({ ttlAtMs: WINDOW.toMs }), WINDOW)).toBeNull();
    // Deleted long after the window: still the window's deletion, and late.
    const late = deletion({ ttlAtMs: WINDOW.toMs - 1, deletedAtMs: 9e6, publishedAtMs: 9e6 });
    expect(classifyDeletion(late, WINDOW, 60_000)).toMatchObject({ status: 'late' });
  });

  it('a retracted REMOVE is a retraction, never late, whatever its lag', () => {
    const d = deletion({ retracted: true, publishedAtMs: 1_900_000 });
    expect(classifyDeletion(d, WINDOW, 1)).toMatchObject({ status: 'retracted' });
  });

  it('without a TTL instant it is placed by its deletion time and marked no-ttl', () => {
    expect(classifyDeletion(deletion({ ttlAtMs: null }), WINDOW)).toMatchObject({
      status: 'no-ttl',
      lagMs: null,
    });
    expect(classifyDeletion(deletion({ ttlAtMs: null, deletedAtMs: WINDOW.toMs }), WINDOW)).toBeNull();
  });
});

describe('classifyPresent', () => {
  const item = { key: 'k', expiresAtMs: 1_000_000, held: false };
  it('an expired item still there is present (no SLA), or pending while within the SLA', () => {
    expect(classifyPresent(item, 1_030_000)).toMatchObject({ status: 'present', lagMs: 30_000 });
    expect(classifyPresent(item, 1_030_000, 30_000)).toMatchObject({ status: 'pending' });
    expect(classifyPresent(item, 1_030_001, 30_000)).toMatchObject({ status: 'present', lagMs: 30_001 });
  });
  it('a held item is held, never present', () => {
    expect(classifyPresent({ ...item, held: true }, 9e9, 1)).toMatchObject({ status: 'held', eventID: null });
  });
});

describe('AuditTally', () => {
  it('counts by status, takes lag percentiles over deletions only, and breaches on late or present', () => {
    const t = new AuditTally();
    const lags = [5000, 1000, 3000, 2000, 4000];
    for (const lag of lags) {
      const row = classifyDeletion(deletion({ publishedAtMs: 1_500_000 + lag }), WINDOW, 4500);
      if (row) t.add(row);
    }
    t.add(classifyDeletion(deletion({ retracted: true, publishedAtMs: 1_999_999 }), WINDOW)!);
    t.add(classifyDeletion(deletion({ ttlAtMs: null }), WINDOW)!);
    t.add(classifyPresent({ key: 'h', expiresAtMs: 1_500_000, held: true }, 1_600_000));
    t.add(classifyPresent({ key: 'p', expiresAtMs: 1_500_000, held: false }, 1_501_000, 4500));
    expect(t.summary()).toEqual({
      deletions: 5,
      late: 1,
      retracted: 1,
      noTtl: 1,
      present: 0,
      pending: 1,
      held: 1,
      lagMs: { p50: 3000, p99: 5000, max: 5000 },
      breach: true,
    });
  });

  it('no deletions: no lag figures; nothing late or present: no breach', () => {
    const t = new AuditTally();
    t.add(classifyPresent({ key: 'p', expiresAtMs: 1, held: false }, 2, 10));
    expect(t.summary()).toMatchObject({ deletions: 0, lagMs: null, pending: 1, breach: false });
    t.add(classifyPresent({ key: 'p', expiresAtMs: 1, held: false }, 20, 10));
    expect(t.summary()).toMatchObject({ present: 1, breach: true });
  });

  it('sorts lags as numbers, not as text', () => {
    const t = new AuditTally();
    for (const lag of [900, 10_000, 2])
      t.add(classifyDeletion(deletion({ publishedAtMs: 1_500_000 + lag }), WINDOW)!);
    expect(t.summary().lagMs).toEqual({ p50: 900, p99: 10_000, max: 10_000 });
  });
});

describe('auditRecord', () => {
  it('has the columns in order, times in ISO-8601, nulls where a field does not apply', () => {
    const r = auditRecord(classifyPresent({ key: 'k', expiresAtMs: 0, held: false }, 1000));
    expect(Object.keys(r)).toEqual(AUDIT_COLUMNS);
    expect(r).toMatchObject({ ttlAt: '1970-01-01T00:00:00.000Z', deletedAt: null, eventID: null, row: null });
  });
});

describe('auditKey', () => {
  const keys = { pk: { S: 'a' }, sk: { N: '1.50' } };
  it('prints canonical JSON with numbers in one spelling, from the index form or the key itself alike', () => {
    expect(auditKey('orders', keys, { hashKeys: false })).toBe('{"pk":{"S":"a"},"sk":{"N":"1.5"}}');
    expect(
      auditKey('orders', keys, { hashKeys: false, canonical: '{"pk":{"S":"a"},"sk":{"N":"1.50"}}' }),
    ).toBe('{"pk":{"S":"a"},"sk":{"N":"1.5"}}');
    expect(auditKey('orders', { pk: { S: 'a' } }, { hashKeys: false, canonical: '{"pk":{"S":"a"}}' })).toBe(
      '{"pk":{"S":"a"}}',
    );
  });
  it('with hashKeys: the keyDigest of the item, whatever the number spelling', () => {
    expect(auditKey('orders', keys, { hashKeys: true })).toBe(
      keyDigest('orders', { pk: { S: 'a' }, sk: { N: '1.5' } }),
    );
    expect(auditKey('orders', keys, { hashKeys: true })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('a dropped table, in words', () => {
  const d = {
    lastDeletionAt: '2026-11-30T05:00:00.000Z',
    settingsChangedAt: '2026-11-01T00:00:00.000Z',
    settingsChangedBy: 'cli:ops',
    ttlEnabled: true,
  };

  it('bounds the drop by the last archived deletion, when one was read', () => {
    expect(droppedTableNote(d)).toBe(
      'no longer exists (dropped after its last archived deletion, 2026-11-30T05:00:00.000Z)',
    );
    expect(droppedTableNote({ ...d, lastDeletionAt: null })).toBe(
      "no longer exists (dropped; no deletion of it archived since the window's start)",
    );
  });

  it('names the settings record the deletions were read with, and whether TTL was off in it', () => {
    expect(droppedSettingsNote(d)).toBe(
      "deletions read with the table's last recorded TTL settings (changed 2026-11-01T00:00:00.000Z by cli:ops)",
    );
    expect(droppedSettingsNote({ ...d, settingsChangedBy: '', ttlEnabled: false })).toBe(
      "deletions read with the table's last recorded TTL settings (changed 2026-11-01T00:00:00.000Z; TTL was disabled then)",
    );
  });
});
