import avro from 'avsc';
import fc from 'fast-check';
import { ContainerWriter, decodeContainer, encodeContainer } from '../../../archiver/container';

const TYPE = avro.Type.forSchema({
  type: 'record',
  name: 'test.Row',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'n', type: 'long' },
    { name: 'image', type: ['null', 'bytes'], default: null },
  ],
});

interface Row {
  id: string;
  n: number;
  image: Buffer | null;
}

function rows(count: number, imageBytes = 200): Row[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `row-${i}-ü`,
    n: i * 7919,
    image: i % 3 === 0 ? null : Buffer.alloc(imageBytes, i % 251),
  }));
}

describe('Avro container writer', () => {
  it('round-trips through avsc BlockDecoder with a deflate header and the writer schema', async () => {
    const input = rows(5000);
    const file = await encodeContainer(TYPE, input, { blockBytes: 16 * 1024 });
    expect(file.subarray(0, 4).toString('latin1')).toBe('Obj\x01');
    const out = await decodeContainer<Row>(file);
    expect(out.codec).toBe('deflate');
    expect(out.metadata['avro.codec']?.toString()).toBe('deflate');
    expect(JSON.parse(out.metadata['avro.schema']?.toString() ?? 'null')).toEqual(
      TYPE.schema({ exportAttrs: true }),
    );
    expect(out.rows).toHaveLength(input.length);
    const hex = (r: Row): string =>
      `${r.id}|${r.n}|${r.image === null ? 'null' : Buffer.from(r.image).toString('hex')}`;
    expect(out.rows.map(hex)).toEqual(input.map(hex));
    // Deflate actually compressed the repetitive images.
    expect(file.length).toBeLessThan(TYPE.toBuffer(input[1]).length * input.length);
  });

  it('writes an empty but valid file for zero rows', async () => {
    const out = await decodeContainer(await encodeContainer(TYPE, []));
    expect(out.rows).toEqual([]);
    expect(out.codec).toBe('deflate');
  });

  it('grows past rows larger than a block', async () => {
    const big = rows(3, 300 * 1024);
    const out = await decodeContainer<Row>(await encodeContainer(TYPE, big, { blockBytes: 1024 }));
    expect(out.rows.map((r) => r.image?.length ?? 0)).toEqual([0, 300 * 1024, 300 * 1024]);
  });

  it('counts rows and raw bytes', () => {
    const w = new ContainerWriter(TYPE);
    const r = rows(10);
    r.forEach((x) => w.append(x));
    expect(w.rowCount).toBe(10);
    expect(w.rawBytes).toBe(r.reduce((s, x) => s + TYPE.toBuffer(x).length, 0));
  });

  it('refuses reserved metadata keys', async () => {
    await expect(encodeContainer(TYPE, [], { metadata: { 'avro.codec': 'x' } })).rejects.toThrow(/reserved/);
  });

  it('keeps any rows and block size intact (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            id: fc.string(),
            n: fc.integer(),
            image: fc.option(fc.uint8Array({ maxLength: 300 })),
          }),
          {
            maxLength: 60,
          },
        ),
        fc.integer({ min: 1, max: 4096 }),
        fc.constantFrom<'deflate' | 'null'>('deflate', 'null'),
        async (input, blockBytes, codec) => {
          const normalized = input.map((r) => ({
            ...r,
            image: r.image === null ? null : Buffer.from(r.image),
          }));
          const out = await decodeContainer<Row>(
            await encodeContainer(TYPE, normalized, { blockBytes, codec }),
          );
          expect(out.codec).toBe(codec);
          expect(
            out.rows.map((r) => ({ ...r, image: r.image === null ? null : Buffer.from(r.image) })),
          ).toEqual(normalized);
        },
      ),
      { numRuns: 50 },
    );
  });
});
