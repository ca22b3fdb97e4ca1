import { auditedTable } from '../../../../cli/audit/report';
import type { ArchivedTableState } from '../../../../control/settings-store';
import { ConflictError, NotFoundError } from '../../../../core/errors';
import type { TableTtlSettings } from '../../../../policy/settings';

const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'exp' } };
const T0 = Date.parse('2026-11-01T00:00:00Z');

/** Which TTL settings `ttlstream audit` reads a table's archived deletions with, whether the table exists or not. */
describe('auditedTable', () => {
  it('a live table: its current settings; TTL off is refused as before (no instant to judge by)', () => {
    const live = (status: 'ENABLED' | 'DISABLING' | 'DISABLED'): ArchivedTableState => ({
      exists: true,
      description: {
        table: 'orders',
        status,
        settings: status === 'DISABLED' ? null : settings,
        changedAt: T0,
        changedBy: 'ops',
        statusSettlesAt: T0,
      },
    });
    expect(auditedTable('orders', live('ENABLED'), 'ctl')).toEqual({
      settings,
      exists: true,
      changedAt: T0,
      changedBy: 'ops',
      ttlEnabled: true,
    });
    expect(auditedTable('orders', live('DISABLING'), 'ctl').ttlEnabled).toBe(false);
    expect(() => auditedTable('orders', live('DISABLED'), 'ctl')).toThrow(ConflictError);
    expect(() => auditedTable('orders', live('DISABLED'), 'ctl')).toThrow(/TTL is DISABLED on orders/);
  });

  it('a dropped table: the settings its row last recorded, even with TTL disabled before the drop', () => {
    const dropped = (enabled: boolean): ArchivedTableState => ({
      exists: false,
      last: { settings, enabled, changedAt: T0, changedBy: 'ops', tableCreatedAt: T0 - 1000 },
    });
    expect(auditedTable('orders', dropped(true), 'ctl')).toEqual({
      settings,
      exists: false,
      changedAt: T0,
      changedBy: 'ops',
      ttlEnabled: true,
    });
    expect(auditedTable('orders', dropped(false), 'ctl')).toMatchObject({ settings, ttlEnabled: false });
  });

  it('a table that does not exist and has no recorded settings: a clear NotFoundError naming the control table', () => {
    const none: ArchivedTableState = { exists: false, last: null };
    expect(() => auditedTable('orders', none, 'ttlstream_control')).toThrow(NotFoundError);
    expect(() => auditedTable('orders', none, 'ttlstream_control')).toThrow(
      /table orders does not exist, and the control table ttlstream_control holds no TTL settings for it/,
    );
  });
});
