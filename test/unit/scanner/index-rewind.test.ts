import { decideRewind, type HeadItem, type RewindState } from '../../../scanner/index-rewind';

const MAX = 600_000;
const ours = (id: string, markedAtMs = 1_000): HeadItem => ({ id, expired: true, markedAtMs });

describe('decideRewind: a due rewind of an expiry-index shard, or put off while its head is a backlog', () => {
  const epoch: RewindState = { epochStartMs: 1_000 };

  it('puts the rewind off when every expired item at the head was marked here since the last rewind', () => {
    const head = [ours('a'), ours('b', 5_000), { id: 'held', expired: false }];
    expect(decideRewind(head, epoch, 60_000, MAX)).toEqual({ rewind: false, head: ['a', 'b'] });
  });

  it('rewinds when the head holds nothing expired (empty, held, not yet due): the rewind reads no more', () => {
    expect(decideRewind([], epoch, 60_000, MAX)).toEqual({ rewind: true, reason: 'nothing-expired' });
    expect(decideRewind([{ id: 'held', expired: false }], epoch, 60_000, MAX)).toEqual({
      rewind: true,
      reason: 'nothing-expired',
    });
  });

  it('rewinds when an expired item at the head was not marked here, or before the last rewind', () => {
    // Arrived behind the cursor (late in the index, put back, TTL moved back), or marked by another process.
    expect(decideRewind([ours('a'), { id: 'late', expired: true }], epoch, 60_000, MAX)).toEqual({
      rewind: true,
      reason: 'not-marked-here',
    });
    // Marked in an earlier epoch: deleted and put back identical, say.
    expect(decideRewind([ours('old', 999)], epoch, 60_000, MAX)).toEqual({
      rewind: true,
      reason: 'not-marked-here',
    });
  });

  it('rewinds when the head has not moved since the last probe: stuck, not a backlog being deleted', () => {
    const state: RewindState = { ...epoch, deferredSinceMs: 60_000, head: ['a', 'b'] };
    expect(decideRewind([ours('a'), ours('b'), ours('c')], state, 120_000, MAX)).toEqual({
      rewind: true,
      reason: 'no-progress',
    });
    // One of them deleted meanwhile: progress.
    expect(decideRewind([ours('b'), ours('c')], state, 120_000, MAX)).toEqual({
      rewind: false,
      head: ['b', 'c'],
    });
  });

  it('rewinds after being put off for maxDeferMs, whatever the head', () => {
    const state: RewindState = { ...epoch, deferredSinceMs: 60_000, head: ['a'] };
    expect(decideRewind([ours('b')], state, 60_000 + MAX - 1, MAX)).toEqual({ rewind: false, head: ['b'] });
    expect(decideRewind([ours('b')], state, 60_000 + MAX, MAX)).toEqual({
      rewind: true,
      reason: 'deferred-too-long',
    });
  });
});
