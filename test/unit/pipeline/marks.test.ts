import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { createHash } from 'node:crypto';
import { canonicalItem } from '../../../pipeline/image';
import { addressOf, markRows, markSk, parseMarkRow, shardOf } from '../../../pipeline/marks';

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

  it('keeps the shard every earlier version computed: sha256(table NUL key), first 4 bytes, mod shards', () => {
    // Marks and journals outlive a release: producers of two versions must agree on an item's shard.
    for (let i = 0; i < 500; i++) {
      const key = canonicalItem({ pk: { S: `k${i}é` }, n: { N: String(i * 7919) } });
      const digest = createHash('sha256').update('orders').update('\0').update(key).digest();
      expect(shardOf('orders', key, 16)).toBe(digest.readUInt32BE(0) % 16);
      expect(shardOf('orders', key, 7)).toBe(digest.readUInt32BE(0) % 7);
    }
    const long = canonicalItem({ pk: { S: 'x'.repeat(2000) } });
    expect(markSk('orders', long)).toBe(`orders#h:${createHash('sha256').update(long).digest('hex')}`);
  });

  it('one item is one address whatever the spelling of its number keys (a Scan under a projection may re-spell them)', () => {
    const asWritten = addressOf('orders', { pk: { S: 'a' }, sk: { N: '1e3' } }, 16);
    for (const sk of ['1000', '1E+3', '1000.0', '+1e3', '10e2']) {
      const other = addressOf('orders', { pk: { S: 'a' }, sk: { N: sk } }, 16);
      expect([other.shard, other.sk]).toEqual([asWritten.shard, asWritten.sk]);
    }
    expect(asWritten.sk).toBe('orders#{"pk":{"S":"a"},"sk":{"N":"1000"}}');
    // The address keeps the attributes as given: it is the identity that is canonical, not the key sent.
    expect(asWritten.keys).toEqual({ pk: { S: 'a' }, sk: { N: '1e3' } });
    const [parsed] = parseMarkRow(markRows('orders', [{ address: asWritten, markedAtMs: 1 }], 1)[0]!);
    expect(parsed?.address).toEqual(asWritten);
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

  it('mark rows round-trip, binary keys included; one row per shard', () => {
    const marks = [
      { pk: { B: new Uint8Array([0, 255, 7]) } },
      { pk: { S: 'a' } },
      { pk: { S: 'b' } },
      { pk: { S: 'c' } },
    ].map((keys, i) => ({
      address: addressOf('bin-table', keys, 2),
      markedAtMs: 1000,
      expiresAtMs: 900 + i,
    }));
    const rows = markRows('bin-table', marks, 1000);
    expect(rows).toHaveLength(new Set(marks.map((m) => m.address.shard)).size);
    const back = rows.flatMap(parseMarkRow);
    expect(back).toHaveLength(4);
    for (const m of marks) {
      const b = back.find((x) => x.address.sk === m.address.sk);
      expect(b).toMatchObject({ address: m.address, markedAtMs: 1000, expiresAtMs: m.expiresAtMs });
      expect(b?.row).toMatch(/^bin-table#@0+1000-[0-9a-f]{12}$/);
    }
  });

  it('splits a shard list too large for one row', () => {
    const marks = Array.from({ length: 400 }, (_, i) => ({
      address: addressOf('t', { pk: { S: `${i}-${'k'.repeat(900)}` } }, 1),
      markedAtMs: 1,
    }));
    const rows = markRows('t', marks, 1);
    expect(rows.length).toBeGreaterThan(1);
    for (const r of rows) expect(Buffer.byteLength(r.marks?.S ?? '')).toBeLessThan(250 * 1024);
    expect(rows.flatMap(parseMarkRow).map((m) => m.address.sk)).toEqual(marks.map((m) => m.address.sk));
  });

  it('reads a single-mark row of the earlier per-item layout', () => {
    const keys: Item = { pk: { S: 'old' } };
    const address = addressOf('t', keys, 4);
    const row: Item = {
      pk: { S: `shard#${address.shard}` },
      sk: { S: address.sk },
      kind: { S: 'mark' },
      table: { S: 't' },
      keys: { S: JSON.stringify({ pk: { S: 'old' } }) },
      markedAtMs: { N: '5' },
      expiresAtMs: { N: '4' },
    };
    expect(parseMarkRow(row)).toEqual([{ address, markedAtMs: 5, expiresAtMs: 4, row: address.sk }]);
  });
});
