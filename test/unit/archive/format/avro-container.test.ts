import avro from 'avsc';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { ContainerWriter, decodeContainer, encodeContainer } from '../../../../archive/format/avro-container';

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

// Thousands of rows deflated and decoded: seconds on a loaded 2-vCPU machine, not a speed check (bench/ does that).
const SLOW_MS = 60_000;

describe('Avro container writer', () => {
  it(
    'keeps every file intact while block buffers are reused between writers',
    async () => {
      // Small blocks, so each file has many; A finishes first and its raw blocks go back to the
      // pool, which B and C (still being written) then take and fill.
      const opts = { blockBytes: 4 * 1024 };
      const [a, b, c] = [
        new ContainerWriter(TYPE, opts),
        new ContainerWriter(TYPE, opts),
        new ContainerWriter(TYPE, opts),
      ];
      const input = rows(3000, 300);
      input.slice(0, 1000).forEach((r, i) => (i % 2 ? a : b).append(r));
      const fileA = await a.finish();
      input.slice(1000, 2000).forEach((r, i) => (i % 2 ? b : c).append(r));
      const fileB = await b.finish();
      input.slice(2000).forEach((r) => c.append(r));
      const fileC = await c.finish();
      const expectA = input.slice(0, 1000).filter((_, i) => i % 2);
      const expectB = [
        ...input.slice(0, 1000).filter((_, i) => !(i % 2)),
        ...input.slice(1000, 2000).filter((_, i) => i % 2),
      ];
      const expectC = [...input.slice(1000, 2000).filter((_, i) => !(i % 2)), ...input.slice(2000)];
      expect((await decodeContainer<Row>(fileA)).rows).toEqual(expectA);
      expect((await decodeContainer<Row>(fileB)).rows).toEqual(expectB);
      expect((await decodeContainer<Row>(fileC)).rows).toEqual(expectC);
    },
    SLOW_MS,
  );

  it(
    'a block deflate cannot shrink (random bytes, output larger than its input) is written whole and reads back',
    async () => {
      const input = Array.from({ length: 300 }, (_, i) => ({
        id: `r${i}`,
        n: i,
        image: randomBytes(4000),
      }));
      const w = new ContainerWriter(TYPE, { blockBytes: 512 * 1024 });
      input.forEach((r) => w.append(r));
      const file = await w.finish(9);
      // Stored, not shrunk: the deflated blocks are larger than the rows' own bytes.
      expect(file.length).toBeGreaterThan(300 * 4000);
      expect((await decodeContainer<Row>(file)).rows).toEqual(input);
    },
    SLOW_MS,
  );

  it(
    'deflates at the level asked for (archive.avroDeflateLevel), readable as any other',
    async () => {
      // Text-like rows, where the levels differ in size: level 1 writes more bytes than level 9.
      const input = rows(2000).map((r, i) => ({
        ...r,
        id: `order ${i % 97} shipped to region ${i % 13} by express`,
      }));
      const at = async (level: number | undefined): Promise<Buffer> => {
        const w = new ContainerWriter(TYPE, { blockBytes: 32 * 1024 });
        input.forEach((r) => w.append(r));
        return w.finish(level);
      };
      const [fast, best, byDefault] = [await at(1), await at(9), await at(undefined)];
      expect(fast.length).toBeGreaterThan(best.length);
      for (const file of [fast, best, byDefault]) {
        const out = await decodeContainer<Row>(file);
        expect(out.codec).toBe('deflate');
        expect(out.rows).toEqual(input);
      }
    },
    SLOW_MS,
  );

  it(
    'round-trips through avsc BlockDecoder with a deflate header and the writer schema',
    async () => {
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
    },
    SLOW_MS,
  );

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
