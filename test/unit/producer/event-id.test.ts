import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { createHash, randomBytes } from 'node:crypto';
import {
  SequenceGenerator,
  canonicalItem,
  eventIdFor,
  sizeBytes,
  stableJson,
  fromJsonItem,
  imageHash,
  packImage,
  toJsonItem,
  unpackImage,
  GZIP_ABOVE_BYTES,
} from '../../../producer/image';

type Item = Record<string, AttributeValue>;

const keys: Item = { pk: { S: 'user#1' }, sk: { N: '7' } };
const image: Item = {
  pk: { S: 'user#1' },
  sk: { N: '7' },
  ttl: { N: '1700000000' },
  tags: { SS: ['b', 'a', 'c'] },
  blob: { B: new Uint8Array([1, 2, 3]) },
  nested: { M: { x: { L: [{ N: '1' }, { NULL: true }, { BOOL: false }] } } },
};

function reversed(item: Item): Item {
  return Object.fromEntries(Object.entries(item).reverse());
}

describe('eventID', () => {
  it('is 32 lower-case hex characters', () => {
    expect(eventIdFor('orders', keys, image)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('is deterministic: same table, key and image give the same id whatever the attribute or set order', () => {
    const shuffled: Item = {
      ...reversed(image),
      tags: { SS: ['c', 'a', 'b'] },
      blob: { B: Buffer.from([1, 2, 3]) },
    };
    expect(eventIdFor('orders', reversed(keys), shuffled)).toBe(eventIdFor('orders', keys, image));
  });

  it('is sha256(stableJson([table, keys, image])), also when the caller passes the canonical image', () => {
    // The definition eventIDs had from the start: a change here would give one deletion two ids across versions.
    const arb = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 6 }),
      fc.oneof(
        fc.string().map((S) => ({ S })),
        fc.integer().map((n) => ({ N: String(n) })),
        fc.uniqueArray(fc.string(), { minLength: 1, maxLength: 4 }).map((SS) => ({ SS })),
        fc.boolean().map((BOOL) => ({ BOOL })),
        fc.uint8Array({ maxLength: 8 }).map((B) => ({ B })),
      ),
    );
    fc.assert(
      fc.property(fc.string(), arb, (table, extra) => {
        const img: Item = { ...(extra as Item), ...keys };
        const expected = createHash('sha256')
          .update(stableJson([table, toJsonItem(keys), toJsonItem(img)]))
          .digest('hex')
          .slice(0, 32);
        expect(eventIdFor(table, keys, img)).toBe(expected);
        expect(eventIdFor(table, keys, img, canonicalItem(img))).toBe(expected);
        // SizeBytes: DynamoDB JSON of Keys + OldImage, whichever order the canonical form puts them in.
        const size =
          Buffer.byteLength(JSON.stringify(toJsonItem(keys))) +
          Buffer.byteLength(JSON.stringify(toJsonItem(img)));
        expect(sizeBytes(keys, img)).toBe(size);
        expect(sizeBytes(keys, img, canonicalItem(img))).toBe(size);
      }),
    );
  });

  it('differs for another table, another key or another image', () => {
    const id = eventIdFor('orders', keys, image);
    expect(eventIdFor('orders2', keys, image)).not.toBe(id);
    expect(eventIdFor('orders', { ...keys, sk: { N: '8' } }, { ...image, sk: { N: '8' } })).not.toBe(id);
    expect(eventIdFor('orders', keys, { ...image, ttl: { N: '1700000001' } })).not.toBe(id);
    expect(eventIdFor('orders', keys, { ...image, extra: { S: '' } })).not.toBe(id);
  });

  it('property: equal images hash equal, different string values hash differently', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const ia: Item = { pk: { S: 'k' }, v: { S: a } };
        const ib: Item = { pk: { S: 'k' }, v: { S: b } };
        expect(imageHash(ia) === imageHash(ib)).toBe(a === b);
        expect(eventIdFor('tbl', { pk: { S: 'k' } }, ia)).toBe(
          eventIdFor('tbl', { pk: { S: 'k' } }, { ...ia }),
        );
      }),
    );
  });
});

describe('SequenceNumber', () => {
  it('is a 21-digit decimal string', () => {
    expect(new SequenceGenerator().next(1_700_000_000_000)).toMatch(/^\d{21}$/);
  });

  it('increases strictly, within one millisecond and when the clock steps back', () => {
    const g = new SequenceGenerator();
    const times = [
      1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_000, 1_699_999_999_000, 1_700_000_000_001,
    ];
    const seqs = times.map((t) => BigInt(g.next(t)));
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]! > seqs[i - 1]!).toBe(true);
  });

  it('increases with decision time across generators (two processes deciding the same key later)', () => {
    const a = new SequenceGenerator();
    const b = new SequenceGenerator();
    for (let i = 0; i < 1000; i++) a.next(1_700_000_000_000); // a busy process
    expect(BigInt(b.next(1_700_000_000_001)) > BigInt(a.next(1_700_000_000_000))).toBe(true);
  });
});

describe('intent image packing', () => {
  it('round-trips small images as JSON text', () => {
    const packed = packImage(image);
    expect('imageJson' in packed).toBe(true);
    expect(imageHash(unpackImage(packed as Record<string, AttributeValue>)!)).toBe(imageHash(image));
  });

  it('gzips large images and round-trips them', () => {
    const big: Item = { ...image, payload: { S: 'x'.repeat(GZIP_ABOVE_BYTES * 2) } };
    const packed = packImage(big);
    expect('imageGz' in packed).toBe(true);
    const back = unpackImage(packed as Record<string, AttributeValue>)!;
    expect(imageHash(back)).toBe(imageHash(big));
    expect(back.blob?.B).toEqual(new Uint8Array([1, 2, 3]));
  });

  it('leaves out an image that is too large even gzipped (the row must fit DynamoDB’s item limit)', () => {
    const noise = new Uint8Array(randomBytes(350 * 1024));
    const packed = packImage({ ...image, noise: { B: noise } });
    expect(packed).toEqual({ imageOmitted: { BOOL: true } });
    expect(unpackImage(packed as Record<string, AttributeValue>)).toBeUndefined();
  });

  it('JSON form keeps binaries and sets exactly', () => {
    expect(imageHash(fromJsonItem(toJsonItem(image)))).toBe(imageHash(image));
  });
});

describe('attribute named __proto__', () => {
  it('survives the intent image round trip and changes the eventID', () => {
    const withProto: Record<string, { S: string }> = Object.fromEntries([
      ['pk', { S: 'a' }],
      ['__proto__', { S: 'kept' }],
    ]);
    const packed = packImage(withProto);
    const back = unpackImage(packed as Record<string, AttributeValue>) as Record<string, unknown>;
    expect(Object.keys(back).sort()).toEqual(['__proto__', 'pk']);
    expect(eventIdFor('t', { pk: { S: 'a' } }, withProto)).not.toBe(
      eventIdFor('t', { pk: { S: 'a' } }, { pk: { S: 'a' } }),
    );
  });
});
