import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { canonicalItem } from '../../../producer/image';
import { addressOf, markSk, markToItem, parseMarkRow, shardOf } from '../../../producer/marks';

type Item = Record<string, AttributeValue>;

describe('marks table layout', () => {
  it('puts one item always in the same shard, within range, whatever the attribute order', () => {
    const a = addressOf('orders', { pk: { S: 'a' }, sk: { N: '1' } }, 16);
    const b = addressOf('orders', { sk: { N: '1' }, pk: { S: 'a' } }, 16);
    expect(a.shard).toBe(b.shard);
    expect(a.sk).toBe(b.sk);
    expect(a.shard).toBeGreaterThanOrEqual(0);
    expect(a.shard).toBeLessThan(16);
  });

  it('spreads keys over all shards', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(shardOf('orders', canonicalItem({ pk: { S: `k${i}` } }), 16));
    expect(seen.size).toBe(16);
  });

  it('sk is <table>#<canonical key>', () => {
    const a = addressOf('orders', { pk: { S: 'a' } }, 4);
    expect(a.sk).toBe('orders#{"pk":{"S":"a"}}');
  });

  it('replaces a canonical key too long for a sort key by its hash', () => {
    const long = canonicalItem({ pk: { S: 'x'.repeat(2000) } });
    const sk = markSk('orders', long);
    expect(sk).toMatch(/^orders#h:[0-9a-f]{64}$/);
    expect(markSk('orders', long)).toBe(sk);
  });

  it('mark rows round-trip, binary keys included', () => {
    const keys: Item = { pk: { B: new Uint8Array([0, 255, 7]) } };
    const address = addressOf('bin-table', keys, 8);
    expect(parseMarkRow(markToItem({ address, markedAtMs: 1000, expiresAtMs: 900 }))).toEqual({
      address,
      markedAtMs: 1000,
      expiresAtMs: 900,
    });
    expect(parseMarkRow(markToItem({ address, markedAtMs: 5 }))).toEqual({ address, markedAtMs: 5 });
  });
});
