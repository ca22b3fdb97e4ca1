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
  keyIdentity,
  packImage,
  toJsonItem,
  unpackImage,
  GZIP_ABOVE_BYTES,
  type DecisionBasis,
} from '../../../pipeline/image';

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

const basis: DecisionBasis = { kind: 'mark', row: 'orders#@000001700000000000-0a1b2c3d4e5f' };

describe('eventID', () => {
  it('is 32 lower-case hex characters', () => {
    expect(eventIdFor('orders', keys, image, basis)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('is deterministic for one decision: same table, key, image and basis give the same id whatever the order', () => {
    const shuffled: Item = {
      ...reversed(image),
      tags: { SS: ['c', 'a', 'b'] },
      blob: { B: Buffer.from([1, 2, 3]) },
    };
    expect(eventIdFor('orders', reversed(keys), shuffled, { ...basis })).toBe(
      eventIdFor('orders', keys, image, basis),
    );
  });

  it('is sha256 over the scheme tag, table, keys, image and basis, also when the caller passes the canonical image', () => {
    // The definition of the per-decision eventIDs (docs/stream-contract.md): a change here would give one
    // deletion two ids across versions, e.g. a recovery after an upgrade.
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
    const arbBasis: fc.Arbitrary<DecisionBasis> = fc.oneof(
      fc.string().map((row) => ({ kind: 'mark' as const, row })),
      fc
        .uint8Array({ minLength: 16, maxLength: 16 })
        .map((b) => ({ kind: 'after' as const, eventID: Buffer.from(b).toString('hex') })),
      fc
        .uint8Array({ minLength: 16, maxLength: 16 })
        .map((b) => ({ kind: 'corrects' as const, eventID: Buffer.from(b).toString('hex') })),
    );
    fc.assert(
      fc.property(fc.string(), arb, arbBasis, (table, extra, b) => {
        const img: Item = { ...(extra as Item), ...keys };
        const by = b.kind === 'mark' ? b.row : b.eventID;
        const expected = createHash('sha256')
          .update(stableJson(['ttlstream.eventID.v2', table, toJsonItem(keys), toJsonItem(img), b.kind, by]))
          .digest('hex')
          .slice(0, 32);
        expect(eventIdFor(table, keys, img, b)).toBe(expected);
        expect(eventIdFor(table, keys, img, b, canonicalItem(img))).toBe(expected);
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
    const id = eventIdFor('orders', keys, image, basis);
    expect(eventIdFor('orders2', keys, image, basis)).not.toBe(id);
    expect(eventIdFor('orders', { ...keys, sk: { N: '8' } }, { ...image, sk: { N: '8' } }, basis)).not.toBe(
      id,
    );
    expect(eventIdFor('orders', keys, { ...image, ttl: { N: '1700000001' } }, basis)).not.toBe(id);
    expect(eventIdFor('orders', keys, { ...image, extra: { S: '' } }, basis)).not.toBe(id);
  });

  it('differs for another decision about the same image: another mark, a decision after a retracted one, a correction', () => {
    const first = eventIdFor('orders', keys, image, basis);
    const ids = [
      first,
      eventIdFor('orders', keys, image, { kind: 'mark', row: 'orders#@000001700000005000-ffeeddccbbaa' }),
      eventIdFor('orders', keys, image, { kind: 'after', eventID: first }),
      eventIdFor('orders', keys, image, { kind: 'corrects', eventID: first }),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    // A chain of decisions about an item that keeps coming back identical (re-put, restore --ttl keep) never
    // repeats an eventID.
    const chain = [first];
    for (let i = 0; i < 50; i++)
      chain.push(
        eventIdFor('orders', keys, image, { kind: 'after', eventID: chain[chain.length - 1] as string }),
      );
    expect(new Set(chain).size).toBe(chain.length);
  });

  it('never equals the eventID earlier releases derived for the same deletion (sha256 of [table, keys, image])', () => {
    const legacy = createHash('sha256')
      .update(stableJson(['orders', toJsonItem(keys), toJsonItem(image)]))
      .digest('hex')
      .slice(0, 32);
    expect(eventIdFor('orders', keys, image, basis)).not.toBe(legacy);
  });

  it('property: equal images hash equal, different string values hash differently', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const ia: Item = { pk: { S: 'k' }, v: { S: a } };
        const ib: Item = { pk: { S: 'k' }, v: { S: b } };
        expect(imageHash(ia) === imageHash(ib)).toBe(a === b);
        expect(eventIdFor('tbl', { pk: { S: 'k' } }, ia, basis)).toBe(
          eventIdFor('tbl', { pk: { S: 'k' } }, { ...ia }, basis),
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
    expect(eventIdFor('t', { pk: { S: 'a' } }, withProto, basis)).not.toBe(
      eventIdFor('t', { pk: { S: 'a' } }, { pk: { S: 'a' } }, basis),
    );
  });
});

describe('keyIdentity', () => {
  it('is canonicalItem for a key whose numbers are spelled as DynamoDB returns them', () => {
    fc.assert(
      fc.property(fc.string(), fc.bigInt(), fc.uint8Array(), (S, n, B) => {
        const key: Item = { pk: { S }, sk: { N: n.toString() }, b: { B } };
        expect(keyIdentity(key)).toBe(canonicalItem(key));
      }),
    );
  });

  it('is one for every spelling of a number, and the eventID with it', () => {
    const ids = ['1e3', '1E+3', '1000', '1000.000', '+10E2'].map((n) =>
      keyIdentity({ pk: { S: 'a' }, sk: { N: n } }),
    );
    expect(new Set(ids).size).toBe(1);
    const image1 = { pk: { S: 'a' }, sk: { N: '1e3' } };
    expect(eventIdFor('orders', { pk: { S: 'a' }, sk: { N: '1E+3' } }, image1, basis)).toBe(
      eventIdFor('orders', { pk: { S: 'a' }, sk: { N: '1e3' } }, image1, basis),
    );
    expect(keyIdentity({ pk: { N: '1' } })).not.toBe(keyIdentity({ pk: { S: '1' } }));
  });
});
