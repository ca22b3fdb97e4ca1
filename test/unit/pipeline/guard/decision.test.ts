import {
  deletionRate,
  judgeDeletes,
  judgeScan,
  mayDelete,
  overFraction,
  type GuardLimits,
} from '../../../../pipeline/guard/decision';

const limits: GuardLimits = { maxExpiredFraction: 0.5, minItemsForFraction: 100, maxDeletesPerMinute: 1000 };

describe('mass-deletion guard decisions', () => {
  it('pauses an ARMED table when more than the fraction of enough items is expired', () => {
    const v = judgeScan('ARMED', { scanned: 200, expired: 101, complete: false }, limits);
    expect(v.action).toBe('pause');
    expect(v.action === 'pause' && v.reason).toMatch(/101 of 200/);
  });

  it('does not judge fewer items than minItemsForFraction', () => {
    expect(judgeScan('ARMED', { scanned: 99, expired: 99, complete: true }, limits)).toEqual({
      action: 'none',
    });
  });

  it('exactly the fraction is not more than it', () => {
    expect(overFraction({ scanned: 200, expired: 100 }, limits)).toBe(false);
    expect(overFraction({ scanned: 200, expired: 101 }, limits)).toBe(true);
  });

  it('minItemsForFraction 0 still needs at least one item', () => {
    expect(overFraction({ scanned: 0, expired: 0 }, { ...limits, minItemsForFraction: 0 })).toBe(false);
    expect(overFraction({ scanned: 1, expired: 1 }, { ...limits, minItemsForFraction: 0 })).toBe(true);
  });

  it('stays quiet while PAUSED', () => {
    expect(judgeScan('PAUSED', { scanned: 1000, expired: 1000, complete: true }, limits)).toEqual({
      action: 'none',
    });
    expect(judgeDeletes('PAUSED', 1_000_000, limits)).toEqual({ action: 'none' });
  });

  it('stays quiet for a CONFIRMED episode, and re-arms after a complete normal pass only', () => {
    expect(judgeScan('CONFIRMED', { scanned: 1000, expired: 900, complete: true }, limits)).toEqual({
      action: 'none',
    });
    expect(judgeScan('CONFIRMED', { scanned: 1000, expired: 10, complete: false }, limits)).toEqual({
      action: 'none',
    });
    expect(judgeScan('CONFIRMED', { scanned: 1000, expired: 10, complete: true }, limits)).toEqual({
      action: 'rearm',
    });
    expect(judgeDeletes('CONFIRMED', 1_000_000, limits)).toEqual({ action: 'none' });
  });

  it('ARMED with a normal pass does nothing', () => {
    expect(judgeScan('ARMED', { scanned: 1000, expired: 10, complete: true }, limits)).toEqual({
      action: 'none',
    });
  });

  it('pauses on a deletion rate above the limit, counting the planned batch', () => {
    expect(judgeDeletes('ARMED', 1000, limits)).toEqual({ action: 'none' });
    const v = judgeDeletes('ARMED', 1001, limits);
    expect(v.action).toBe('pause');
    expect(v.action === 'pause' && v.reason).toMatch(/1001 deletions/);
  });

  it('only PAUSED stops deletions', () => {
    expect(mayDelete('ARMED')).toBe(true);
    expect(mayDelete('CONFIRMED')).toBe(true);
    expect(mayDelete('PAUSED')).toBe(false);
  });

  it('a CONFIRMED episode lasts while deletions run above the limit (this minute or the last)', () => {
    const normal = { scanned: 1000, expired: 10, complete: true };
    expect(judgeScan('CONFIRMED', normal, limits, { current: 1001, previous: 0 })).toEqual({
      action: 'none',
    });
    expect(judgeScan('CONFIRMED', normal, limits, { current: 0, previous: 1001 })).toEqual({
      action: 'none',
    });
    expect(judgeScan('CONFIRMED', normal, limits, { current: 1000, previous: 1000 })).toEqual({
      action: 'rearm',
    });
  });

  it('reads the two minute buckets of the guard row as of now', () => {
    expect(deletionRate(undefined, 100)).toEqual({ current: 0, previous: 0 });
    expect(deletionRate({ minute: 100, count: 7, prevMinute: 99, prevCount: 3 }, 100)).toEqual({
      current: 7,
      previous: 3,
    });
    // The previous bucket only counts when it is the minute just before.
    expect(deletionRate({ minute: 100, count: 7, prevMinute: 97, prevCount: 3 }, 100)).toEqual({
      current: 7,
      previous: 0,
    });
    // Nothing counted yet this minute: the last bucket is the previous minute's.
    expect(deletionRate({ minute: 99, count: 7, prevMinute: 98, prevCount: 3 }, 100)).toEqual({
      current: 0,
      previous: 7,
    });
    expect(deletionRate({ minute: 90, count: 7 }, 100)).toEqual({ current: 0, previous: 0 });
  });
});
