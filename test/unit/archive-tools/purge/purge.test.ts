import { purgeArchive } from '../../../../archive-tools/purge';
import {
  DAY_MS,
  effectiveRetentionDays,
  fileDueForPurge,
  lifecycleConfiguration,
} from '../../../../archive/retention/policy';
import { retentionResolver } from '../../../../archive/retention/resolve';
import { startPurgeSchedule } from '../../../../archiver/schedules/purge';
import { prepareRow, type PreparedRow } from '../../../../archive/rows';
import { encodeArchiveJson, purgePath, type PurgeRecord } from '../../../../archive/storage';
import { verifyArchive } from '../../../../archive-tools/verify';
import { NotFoundError } from '../../../../core/errors';
import { silentLogger } from '../../../../core/logger';
import { toArchived } from '../../../../schemas';
import { archiveRows, makeRecord, MemoryStorage } from '../../../support/archive-fixture';

const T = 'topic';
const NOW = Date.UTC(2024, 6, 1, 12, 0);
const HOUR = 3_600_000;

/** Offsets 0..n-1, one per hour going back from NOW (offset i deleted i hours... oldest first). */
function row(i: number, n: number, table: string): PreparedRow {
  const deletedSec = Math.floor((NOW - (n - i) * 12 * HOUR) / 1000);
  return prepareRow(
    toArchived(
      { kind: 'remove', record: makeRecord(table, i, deletedSec, 100) },
      { topic: T, partition: 0, offset: String(i), timestamp: String(i) },
    ),
  );
}

/** 20 records twelve hours apart (the oldest 10 days before NOW), two tables, rolls of 4 offsets. */
async function twentyRecords(): Promise<MemoryStorage> {
  const storage = new MemoryStorage();
  const rows = Array.from({ length: 20 }, (_, i) => row(i, 20, i % 2 ? 'orders' : 'users'));
  await archiveRows(storage, T, rows, { perRoll: 4 });
  return storage;
}

const dataFiles = (s: MemoryStorage): string[] =>
  [...s.objects.keys()].filter((k) => k.endsWith('.avro')).sort();

describe('retention policy (pure)', () => {
  it('a file is due when its whole deletion hour ended before the cutoff', () => {
    const path = 'table=orders/date=2024-05-01/hour=10/t+0+00000000000000000000-00000000000000000009.avro';
    const hourEnd = Date.UTC(2024, 4, 1, 11, 0);
    expect(fileDueForPurge(path, hourEnd)).toBe(true);
    expect(fileDueForPurge(path, hourEnd - 1)).toBe(false);
    expect(fileDueForPurge('table=orders/notes.txt', hourEnd + DAY_MS)).toBe(false);
  });

  it("the table's override wins over the default; neither means keep", () => {
    expect(effectiveRetentionDays(30, 7)).toBe(7);
    expect(effectiveRetentionDays(30, undefined)).toBe(30);
    expect(effectiveRetentionDays(undefined, undefined)).toBeNull();
  });

  it('resolves the override from TTL settings, and the default for a table that no longer exists', async () => {
    const resolve = retentionResolver(30, {
      describe: async (table) => {
        if (table === 'gone') throw new NotFoundError('no table gone');
        return {
          settings:
            table === 'orders'
              ? { policy: { mode: 'dynamodb', attributeName: 'ttl' }, archiveRetentionDays: 3 }
              : null,
        };
      },
    });
    expect([await resolve('orders'), await resolve('users'), await resolve('gone')]).toEqual([3, 30, 30]);
  });

  it('prints S3 lifecycle rules for the table prefix and its key indexes, a day beyond the retention', () => {
    expect(lifecycleConfiguration('orders', 30, 'archive/root')).toEqual({
      Rules: [
        {
          ID: 'ttlstream-archive-retention-orders',
          Status: 'Enabled',
          Filter: { Prefix: 'archive/root/table=orders/' },
          Expiration: { Days: 31 },
          NoncurrentVersionExpiration: { NoncurrentDays: 1 },
        },
        {
          ID: 'ttlstream-archive-index-retention-orders',
          Status: 'Enabled',
          Filter: { Prefix: 'archive/root/_index/table=orders/' },
          Expiration: { Days: 31 },
          NoncurrentVersionExpiration: { NoncurrentDays: 1 },
        },
      ],
    });
    expect(lifecycleConfiguration('orders', 1, '').Rules.map((r) => r.Filter)).toEqual([
      { Prefix: 'table=orders/' },
      { Prefix: '_index/table=orders/' },
    ]);
    // Rule IDs are unique even when a long table name is cut to S3's 255 characters.
    const ids = lifecycleConfiguration('t'.repeat(255), 1, '').Rules.map((r) => r.ID);
    expect(new Set(ids).size).toBe(2);
  });
});

describe('archive purge', () => {
  const fiveDays = async (): Promise<number> => 5;

  it('removes exactly the files past the retention, records each, and the archive still verifies', async () => {
    const s = await twentyRecords();
    const before = dataFiles(s);
    const due = before.filter((f) => fileDueForPurge(f, NOW - 5 * DAY_MS));
    expect(due.length).toBeGreaterThan(0);
    expect(due.length).toBeLessThan(before.length);
    const result = await purgeArchive(s, { retentionDays: fiveDays, actor: 'test', nowMs: NOW });
    expect(result.files.map((f) => f.file).sort()).toEqual(due);
    expect(dataFiles(s)).toEqual(before.filter((f) => !due.includes(f)));
    for (const f of due) {
      expect(s.objects.has(`${f}.idx.json`)).toBe(false);
      const rec = s.json(purgePath(f)) as PurgeRecord;
      expect(rec).toMatchObject({ file: f, retentionDays: 5, actor: 'test', purgedAtMs: NOW });
      expect(rec.sealed?.path).toBe(f);
    }
    const report = await verifyArchive(s);
    expect(report.findings).toEqual([]);
    expect(report.purged).toBe(due.length);
    expect(report.rows + result.rows).toBe(20);
  });

  it('--dry-run lists the same files and writes nothing', async () => {
    const s = await twentyRecords();
    const writes = s.ops.length;
    const dry = await purgeArchive(s, { retentionDays: fiveDays, actor: 'test', nowMs: NOW, dryRun: true });
    expect(s.ops.slice(writes).filter((o) => !o.startsWith('list '))).toEqual([]);
    const real = await purgeArchive(s, { retentionDays: fiveDays, actor: 'test', nowMs: NOW });
    expect(dry.files).toEqual(real.files);
  });

  it('is idempotent, honours a table filter and a per-table retention, and keeps tables without one', async () => {
    const s = await twentyRecords();
    const onlyOrders = async (t: string): Promise<number | null> => (t === 'orders' ? 5 : null);
    const first = await purgeArchive(s, { retentionDays: onlyOrders, actor: 'a', nowMs: NOW });
    expect(first.files.every((f) => f.table === 'orders')).toBe(true);
    const again = await purgeArchive(s, { retentionDays: onlyOrders, actor: 'a', nowMs: NOW });
    expect(again.files).toEqual([]);
    expect(again.alreadyPurged).toBe(first.files.length);
    const users = await purgeArchive(s, { retentionDays: fiveDays, actor: 'a', nowMs: NOW, table: 'users' });
    expect(users.files.length).toBeGreaterThan(0);
    expect(users.files.every((f) => f.table === 'users')).toBe(true);
    expect((await verifyArchive(s)).findings).toEqual([]);
  });

  it('interrupted after its record, the file is a purge in progress (not a finding) until a rerun removes it', async () => {
    const s = await twentyRecords();
    s.failOnce = null;
    const realDelete = s.delete.bind(s);
    let deletes = 0;
    s.delete = async (path: string) => {
      if (++deletes === 2) throw new Error('crash');
      await realDelete(path);
    };
    await expect(purgeArchive(s, { retentionDays: fiveDays, actor: 'a', nowMs: NOW })).rejects.toThrow(
      'crash',
    );
    s.delete = realDelete;
    const mid = await verifyArchive(s);
    expect(mid.findings).toEqual([]);
    expect(mid.purgeInProgress).toHaveLength(1);
    await purgeArchive(s, { retentionDays: fiveDays, actor: 'a', nowMs: NOW });
    const after = await verifyArchive(s);
    expect(after.findings).toEqual([]);
    expect(after.purgeInProgress).toEqual([]);
  });

  it('verify: a file removed without a record, or with a record of another seal, is a finding', async () => {
    const s = await twentyRecords();
    await purgeArchive(s, { retentionDays: fiveDays, actor: 'a', nowMs: NOW });
    const [purged] = [...s.objects.keys()].filter((k) => k.startsWith('_purge/')) as [string];
    const rec = s.json(purged) as PurgeRecord;
    s.objects.delete(purged);
    expect((await verifyArchive(s)).findings.map((f) => f.kind).sort()).toEqual([
      'missing-file',
      'missing-index',
    ]);
    const forged = { ...rec, sealed: rec.sealed && { ...rec.sealed, sha256: '0'.repeat(64) } };
    s.objects.set(purged, encodeArchiveJson(forged));
    expect((await verifyArchive(s)).findings.map((f) => f.kind)).toEqual(['bad-purge']);
    // A record that excuses a file which was not yet due (claims a purge a year before its time).
    s.objects.set(purged, encodeArchiveJson(rec));
    expect((await verifyArchive(s)).findings).toEqual([]);
    const early = rec.purgedAtMs - 365 * DAY_MS;
    s.objects.set(
      purged,
      encodeArchiveJson({ ...rec, purgedAtMs: early, cutoffMs: early - rec.retentionDays * DAY_MS }),
    );
    expect((await verifyArchive(s)).findings.map((f) => f.detail)).toEqual([
      expect.stringContaining('was not past a 5-day retention'),
    ]);
    s.objects.set(purged, encodeArchiveJson({ ...rec, cutoffMs: rec.cutoffMs + DAY_MS }));
    expect((await verifyArchive(s)).findings.map((f) => f.kind)).toEqual(['bad-purge']);
    s.objects.set(purged, encodeArchiveJson(forged));
    const young = dataFiles(s)[dataFiles(s).length - 1] as string;
    s.objects.set(purgePath(`${young}x`), encodeArchiveJson({ ...rec, file: `${young}x` }));
    expect((await verifyArchive(s)).findings.map((f) => f.kind).sort()).toEqual(['bad-purge', 'bad-purge']);
  });

  it('the archiver schedule purges at its interval, and stops', async () => {
    const s = await twentyRecords();
    const due = dataFiles(s).filter((f) => fileDueForPurge(f, Date.now() - 5 * DAY_MS));
    // The archive's hours are relative to NOW (July 2024): every file is past 5 days today.
    expect(due).toEqual(dataFiles(s));
    const schedule = startPurgeSchedule({
      storage: s,
      logger: silentLogger,
      intervalMs: 20,
      retentionDays: fiveDays,
      actor: 'archiver:test',
    });
    for (let i = 0; i < 100 && dataFiles(s).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    await schedule.stop();
    expect(dataFiles(s)).toEqual([]);
    const report = await verifyArchive(s);
    expect(report.findings).toEqual([]);
    expect(report.purged).toBe(due.length);
  });
});
