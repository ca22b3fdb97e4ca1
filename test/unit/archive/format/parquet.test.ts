import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import zlib from 'node:zlib';
import { decodeDataFile, parquetEncodingPool, parquetFormat } from '../../../../archive/format';
import { encodeRowChunks } from '../../../../archive/format/parquet-encode';
import { canonicalKeyOf } from '../../../../archive/format/parquet-rows';
import { rowBuffer } from '../../../../archive/rows';
import { prepareRow } from '../../../../archive/rows';
import { RollBuilder } from '../../../../archiver/roll-builder';
import { encodeRoll } from '../../../../archiver/writer';
import { planRoll } from '../../../../archive/roll';
import { ValidationError } from '../../../../core/errors';
import type { TableTtlSettings } from '../../../../policy/settings';
import {
  canonicalJson,
  toAvroArchived,
  toJsonMap,
  type ArchivedRecord,
  type AttributeMap,
} from '../../../../schemas';
import { removeRow, retractRowAt } from '../../../support/archive-fixture';

/** An image of every AttributeValue type, with the spellings a naive copy would change. */
const EVERY_TYPE: AttributeMap = {
  s: { S: 'héllo "quoted" \u2028 line' },
  n: { N: '12345678901234567890.123456789012345678' },
  nSpelled: { N: '1.50' },
  b: { B: Uint8Array.from([0, 255, 1, 2, 3]) },
  ss: { SS: ['z', 'a', 'm'] },
  ns: { NS: ['10', '-0.5', '1E+3'] },
  bs: { BS: [Uint8Array.from([1]), Uint8Array.from([2, 3])] },
  m: { M: { inner: { M: { deep: { L: [{ S: 'x' }, { N: '2' }, { NULL: true }, { BOOL: false }] } } } } },
  l: { L: [{ SS: ['q'] }, { B: Uint8Array.from([9]) }] },
  nul: { NULL: true },
  bool: { BOOL: true },
  expiresAt: { N: '1700000000' },
};

function rows(): ArchivedRecord[] {
  const a = removeRow(
    {
      table: 'orders',
      keys: { pk: { S: 'customer#1' }, sk: { N: '7' } },
      image: EVERY_TYPE,
      deletedAtS: 1_700_000_100,
    },
    { offset: 0n },
  );
  const b = removeRow(
    {
      table: 'orders',
      keys: { pk: { S: 'customer#2' }, sk: { N: '8' } },
      image: { note: { S: 'second' } },
      deletedAtS: 1_700_000_200,
    },
    { offset: 1n },
  );
  const c = retractRowAt(2, b, 1_700_000_201_000);
  return [a, b, c];
}

const ttl: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } };

async function parquetFileOf(records: ArchivedRecord[]): Promise<Buffer> {
  return parquetFormat.encode(records, { ttl });
}

async function readColumns(body: Buffer): Promise<Array<Record<string, unknown>>> {
  const file = body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer;
  return (await parquetReadObjects({
    file,
    compressors: { ZSTD: (input: Uint8Array) => zlib.zstdDecompressSync(input) },
  })) as Array<Record<string, unknown>>;
}

// The encoding threads load their modules from TypeScript source here, which takes seconds on a busy machine: once,
// before the tests, rather than inside the first test's time limit.
beforeAll(() => parquetEncodingPool.warm(), 60_000);

describe('Parquet data files', () => {
  it('give back every row exactly, for every AttributeValue type', async () => {
    const records = rows();
    const decoded = await decodeDataFile(await parquetFileOf(records), 'x.parquet');
    expect(decoded).toEqual(records);
    const image = decoded[0]?.record?.dynamodb.OldImage ?? {};
    // Byte-exact: the number spellings and the binaries as they were deleted.
    expect(toJsonMap(image)).toEqual(toJsonMap(records[0]?.record?.dynamodb.OldImage ?? {}));
    expect(image.nSpelled).toEqual({ N: '1.50' });
  });

  it('have the typed columns a person queries', async () => {
    const [first, , retraction] = await readColumns(await parquetFileOf(rows()));
    expect(first).toMatchObject({
      event_name: 'REMOVE',
      table_name: 'orders',
      key: '{"pk":{"S":"customer#1"},"sk":{"N":"7"}}',
      key_pk: 'customer#1',
      key_sk: 7,
      ttl_mode: 'dynamodb',
      user_identity_type: 'Service',
      principal_id: 'dynamodb.amazonaws.com',
      topic: 'ttlstream.remove',
      partition: 0,
      offset: 0n,
      is_retraction: false,
      retraction_reason: null,
    });
    expect((first?.deleted_at as Date).toISOString()).toBe('2023-11-14T22:15:00.000Z');
    expect((first?.expired_at as Date).toISOString()).toBe('2023-11-14T22:13:20.000Z');
    const item: unknown = JSON.parse(first?.item as string);
    expect(item).toMatchObject({
      s: 'héllo "quoted" \u2028 line',
      nSpelled: 1.5,
      b: 'AP8BAgM=',
      ss: ['z', 'a', 'm'],
      ns: [10, -0.5, 1000],
      nul: null,
      bool: true,
      m: { inner: { deep: ['x', 2, null, false] } },
    });
    expect(JSON.parse(first?.old_image as string)).toMatchObject({
      nSpelled: { N: '1.50' },
      b: { B: 'AP8BAgM=' },
    });
    expect(retraction).toMatchObject({
      event_name: 'RETRACT',
      is_retraction: true,
      retraction_reason: 'item-changed',
      old_image: null,
      item: null,
    });
  });

  it('are what the archiver writes row by row, and what the reference encoder writes', async () => {
    const prepared = rows().map((r) => prepareRow(r));
    const builder = new RollBuilder('ttlstream.remove', 0, 'parquet');
    for (const p of prepared) builder.add(p);
    const built = await builder.finish(0n, 2n);
    const plan = planRoll('ttlstream.remove', 0, 0n, 2n, prepared, 'parquet');
    expect(built.plan.files.map((f) => f.path)).toEqual(plan.files.map((f) => f.path));
    expect(plan.files.every((f) => f.path.endsWith('.parquet'))).toBe(true);
    const reference = await encodeRoll(plan);
    for (const [i, file] of plan.files.entries()) {
      const fromBuilder = await decodeDataFile(built.encoded.data[i] as Buffer, file.path);
      const fromReference = await decodeDataFile(reference.data[i] as Buffer, file.path);
      expect(fromBuilder).toEqual(fromReference);
      expect(built.encoded.index[i]?.toString()).toBe(reference.index[i]?.toString());
    }
  });

  it('are compressed at the zstd level asked for (archive.parquetZstdLevel), readable at any', async () => {
    const many = Array.from({ length: 200 }, (_, i) =>
      removeRow({
        table: 'orders',
        keys: { pk: { S: `c#${i}` } },
        image: { note: { S: `${'lorem ipsum dolor '.repeat(20)} ${i * 7919}` } },
        deletedAtS: 1_700_000_000 + i,
      }),
    );
    const [fast, small] = await Promise.all([
      parquetFormat.encode(many, { ttl, zstdLevel: 1 }),
      parquetFormat.encode(many, { ttl, zstdLevel: 19 }),
    ]);
    expect(small.length).toBeLessThan(fast.length);
    expect(await decodeDataFile(fast, 'a.parquet')).toEqual(await decodeDataFile(small, 'b.parquet'));
  });

  it('are compressed with zstd, one row group per 100 000 rows', async () => {
    const meta = parquetMetadata((await parquetFileOf(rows())).buffer.slice(0) as ArrayBuffer);
    expect(meta.row_groups).toHaveLength(1);
    expect(meta.row_groups[0]?.columns.every((c) => c.meta_data?.codec === 'ZSTD')).toBe(true);
  });

  it('refuse a damaged file with an error naming it, never fewer rows', async () => {
    const body = await parquetFileOf(rows());
    const cut = body.subarray(0, body.length - 10);
    await expect(decodeDataFile(cut, 'cut.parquet')).rejects.toThrow(ValidationError);
    await expect(decodeDataFile(cut, 'cut.parquet')).rejects.toThrow(/cut\.parquet: truncated/);
    const flipped = Buffer.from(body);
    flipped[0] = 0;
    await expect(decodeDataFile(flipped, 'x.parquet')).rejects.toThrow(/x\.parquet: not a Parquet file/);
  });

  it('keep rows by number with their stored values, the others gone', async () => {
    const records = rows();
    const body = await parquetFileOf(records);
    const kept = await parquetFormat.keepRows(body, 'x.parquet', [0, 2]);
    expect(kept.total).toBe(3);
    expect(kept.eventIDs).toEqual([records[0]?.eventID, records[2]?.eventID]);
    const before = await readColumns(body);
    const after = await readColumns(kept.data);
    expect(after).toEqual([before[0], before[2]]);
  });

  it('write the key column as the key index writes the key', () => {
    const keys: AttributeMap = {
      sk: { N: '1.50' },
      pk: { S: 'a "b" \u00e9' },
      Z: { B: Uint8Array.from([0, 255]) },
      é: { S: 'x' },
    };
    expect(
      canonicalKeyOf(toAvroArchived(removeRow({ table: 't', keys, deletedAtS: 1 })).record!.dynamodb.Keys),
    ).toBe(canonicalJson(keys));
  });
});

describe('Parquet encoding threads', () => {
  afterAll(() => parquetEncodingPool.close());

  it("give the bytes this thread gives, and take the rows' memory with them", async () => {
    const prepared = rows().map((r) => prepareRow(r));
    const chunk = (): Uint8Array => {
      const bytes = Buffer.concat(prepared.map((p) => rowBuffer(p.avro)));
      const owned = new Uint8Array(new ArrayBuffer(bytes.length + 100), 0, bytes.length);
      owned.set(bytes);
      return owned;
    };
    const here = encodeRowChunks([chunk()], { ttl });
    const moved = chunk();
    const there = await parquetEncodingPool.encode([moved], { ttl });
    expect(there.equals(here)).toBe(true);
    expect(moved.byteLength).toBe(0); // transferred, not copied
  });

  it('fail a file whose rows cannot be encoded, with the reason, and go on encoding', async () => {
    const garbage = new Uint8Array(new ArrayBuffer(8));
    garbage.set([2, 0x61, 2, 0x62, 0, 0, 0, 0]);
    await expect(parquetEncodingPool.encode([garbage], { ttl: null })).rejects.toThrow(/Parquet encoding: /);
    const ok = await parquetEncodingPool.encode([], { ttl: null });
    expect(ok.subarray(0, 4).toString('latin1')).toBe('PAR1');
  });
});
