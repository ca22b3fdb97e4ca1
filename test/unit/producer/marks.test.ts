import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { canonicalItem, imageHash } from '../../../producer/image';
import {
  INTENT_SUFFIX,
  addressOf,
  intentToItem,
  markSk,
  markToItem,
  parseRow,
  shardOf,
  type Intent,
} from '../../../producer/marks';

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

  it('sk is <table>#<canonical key>, and the intent row sorts right after its mark', () => {
    const a = addressOf('orders', { pk: { S: 'a' } }, 4);
    expect(a.sk).toBe('orders#{"pk":{"S":"a"}}');
    const other = addressOf('orders', { pk: { S: 'a}' } }, 4); // a key whose JSON extends the first one's
    const sorted = [a.sk, a.sk + INTENT_SUFFIX, other.sk].sort();
    expect(sorted.indexOf(a.sk + INTENT_SUFFIX)).toBe(sorted.indexOf(a.sk) + 1);
  });

  it('replaces a canonical key too long for a sort key by its hash', () => {
    const long = canonicalItem({ pk: { S: 'x'.repeat(2000) } });
    const sk = markSk('orders', long);
    expect(sk).toMatch(/^orders#h:[0-9a-f]{64}$/);
    expect(markSk('orders', long)).toBe(sk);
  });

  it('mark and intent rows round-trip, binary keys included', () => {
    const keys: Item = { pk: { B: new Uint8Array([0, 255, 7]) } };
    const address = addressOf('bin-table', keys, 8);
    const mark = parseRow(markToItem({ address, markedAtMs: 1000, expiresAtMs: 900 }));
    expect(mark).toEqual({ kind: 'mark', mark: { address, markedAtMs: 1000, expiresAtMs: 900 } });

    const image: Item = { ...keys, ttl: { N: '1' }, big: { S: 'y'.repeat(20_000) } };
    const intent: Intent = {
      address,
      eventID: 'e'.repeat(32),
      imageHash: imageHash(image),
      image,
      sequenceNumber: '000001700000000000000',
      decidedAtMs: 1700000000000,
      state: 'PUBLISHED',
    };
    const row = intentToItem(intent);
    expect(row.sk?.S).toBe(address.sk + INTENT_SUFFIX);
    const back = parseRow(row);
    expect(back.kind).toBe('intent');
    if (back.kind !== 'intent') return;
    expect({ ...back.intent, image: undefined }).toEqual({ ...intent, image: undefined });
    expect(imageHash(back.intent.image!)).toBe(intent.imageHash);
  });
});
