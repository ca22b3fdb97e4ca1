import { parquetMetadata } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import zlib from 'node:zlib';
import { openCatalog } from '../../../../archive/catalog';
import { eraseArchive } from '../../../../archive-tools/erase';
import { parquetEncodingPool } from '../../../../archive/format';
import { readArchiveFile } from '../../../../archive/reader';
import { prepareRow } from '../../../../archive/rows';
import { formatOfPath } from '../../../../archive/storage';
import { verifyArchive } from '../../../../archive-tools/verify';
import { toArchived, type AttributeMap } from '../../../../schemas';
import {
  archiveRows,
  collect,
  findingKinds,
  makeRecord,
  MemoryStorage,
  withKeys,
} from '../../../support/archive-fixture';

/**
 * Erasure and the hash chain over Parquet files (docs/decisions/0031): `archive erase` rewrites a
 * Parquet file from its kept rows, so no page, statistic, dictionary or bloom filter of the live
 * files keeps anything of the erased key; `archive verify` proves the chain over both formats.
 */

const SUBJECT: AttributeMap = { pk: { S: 'subject-7f3a9c' }, sk: { N: '424242.5' } };
const SECRET = Uint8Array.from([0xde, 0xad, 0xbe, 0xef, 0x13, 0x37, 0xc0, 0xde, 0x42]);
const SUBJECT_IMAGE: AttributeMap = {
  email: { S: 'alice.unique-subject@example.org' },
  secret: { B: SECRET },
  balance: { N: '31337.0271828' },
  tags: { SS: ['subject-tag-zq9'] },
};
const H = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

/** Every trace of the subject a leak could leave, as bytes (binaries are base64 in both image columns). */
function needles(): Array<{ what: string; bytes: Buffer }> {
  const double = Buffer.alloc(8);
  double.writeDoubleLE(424242.5);
  const text = [
    'subject-7f3a9c',
    '424242.5',
    'alice.unique-subject@example.org',
    Buffer.from(SECRET).toString('base64'),
    '31337.0271828',
    'subject-tag-zq9',
  ];
  return [
    ...text.map((t) => ({ what: t, bytes: Buffer.from(t, 'utf8') })),
    // The first 8 bytes of a statistic truncated to 16 bytes would still show these.
    ...text.map((t) => ({ what: `${t} (first 8 bytes)`, bytes: Buffer.from(t, 'utf8').subarray(0, 8) })),
    { what: 'key_sk as a DOUBLE', bytes: double },
  ];
}

/**
 * Every byte of a Parquet file as a reader could see it: the file itself (footer, statistics,
 * column and offset indexes, bloom filters, plain pages) and each page decompressed (dictionary
 * pages whole, data pages v2 with their levels). Fails if the file has a bloom filter: the scan
 * could not read one, so none may be written.
 */
function parquetBytes(body: Buffer): Buffer[] {
  const file = body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer;
  const view = new DataView(file);
  const out: Buffer[] = [body];
  for (const group of parquetMetadata(file).row_groups) {
    for (const chunk of group.columns) {
      const meta = chunk.meta_data;
      if (!meta) throw new Error('column chunk without metadata');
      if (meta.bloom_filter_offset !== undefined) throw new Error('a bloom filter was written');
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      const end = start + Number(meta.total_compressed_size);
      const reader = { view, offset: start };
      while (reader.offset < end) {
        const header = parquetHeader(reader);
        const page = body.subarray(reader.offset, reader.offset + header.compressed_page_size);
        reader.offset += header.compressed_page_size;
        const v2 = header.data_page_header_v2;
        const levels = v2 ? v2.repetition_levels_byte_length + v2.definition_levels_byte_length : 0;
        const compressed = v2?.is_compressed === false ? null : page.subarray(levels);
        out.push(page.subarray(0, levels));
        out.push(compressed ? zlib.zstdDecompressSync(compressed) : page.subarray(levels));
      }
    }
  }
  return out;
}

/** The needles found in any live object of the archive (data, indexes, manifests, records, ledger). */
async function traces(storage: MemoryStorage): Promise<string[]> {
  const found = new Set<string>();
  for (const [path, body] of storage.objects) {
    const views = formatOfPath(path) === 'parquet' ? parquetBytes(body) : [body];
    for (const n of needles()) if (views.some((v) => v.includes(n.bytes))) found.add(`${n.what} in ${path}`);
  }
  return [...found].sort();
}

/** 12 records of users in rolls of 3, the subject's at i = 1, 4 and 10; the first `avroRolls` rolls in Avro. */
async function archive(avroRolls: number): Promise<MemoryStorage> {
  const storage = new MemoryStorage();
  const rows = Array.from({ length: 12 }, (_, i) => {
    const r = makeRecord('users', i, H + i * 900, 50);
    const subject = withKeys(
      { ...r, dynamodb: { ...r.dynamodb, OldImage: { ...r.dynamodb.OldImage, ...SUBJECT_IMAGE } } },
      SUBJECT,
    );
    return prepareRow(
      toArchived(
        { kind: 'remove', record: [1, 4, 10].includes(i) ? subject : r },
        { topic: 't', partition: 0, offset: String(i), timestamp: '1' },
      ),
    );
  });
  const cut = avroRolls * 3;
  await archiveRows(storage, 't', rows.slice(0, cut), { perRoll: 3, format: 'avro' });
  await archiveRows(storage, 't', rows.slice(cut), { perRoll: 3, first: BigInt(cut), format: 'parquet' });
  return storage;
}

function dataFilesEnding(storage: MemoryStorage, ext: string): string[] {
  return [...storage.objects.keys()].filter((k) => k.startsWith('table=') && k.endsWith(ext)).sort();
}

// The encoding threads load their modules from TypeScript source here, which takes seconds on a busy machine: once,
// before the tests, rather than inside the first test's time limit.
beforeAll(() => parquetEncodingPool.warm(), 60_000);

describe('Parquet archive: the hash chain', () => {
  it('verify passes over an archive that switched from Avro to Parquet at a roll boundary', async () => {
    const storage = await archive(2);
    expect(dataFilesEnding(storage, '.avro').length).toBeGreaterThan(0);
    expect(dataFilesEnding(storage, '.parquet').length).toBeGreaterThan(0);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.rows).toBe(12);
    // Readers read both formats through the catalog.
    const files = await collect(openCatalog(storage).listFiles('users'));
    const read = (await Promise.all(files.map((f) => readArchiveFile(storage, f.path)))).flat();
    expect(read.map((r) => r.offset).sort((a, b) => Number(a) - Number(b))).toEqual(
      Array.from({ length: 12 }, (_, i) => String(i)),
    );
  });

  it('verify catches one flipped byte in a Parquet file, wherever it is', async () => {
    const storage = await archive(0);
    const [path] = dataFilesEnding(storage, '.parquet');
    const body = storage.objects.get(path as string) as Buffer;
    for (const at of [4, Math.floor(body.length / 2), body.length - 9]) {
      const flipped = Buffer.from(body);
      flipped[at] = (flipped[at] as number) ^ 0x01;
      storage.objects.set(path as string, flipped);
      expect(await findingKinds(storage)).toEqual(['altered-file']);
    }
  });
});

describe('Parquet archive: erasure', () => {
  it('rewrites the files by generation, verify passes, and no live byte keeps the subject', async () => {
    const storage = await archive(0);
    // The scan sees the subject before the erasure (in pages and statistics): it can find what it looks for.
    const before = await traces(storage);
    const unseen = needles().filter((n) => !before.some((t) => t.startsWith(`${n.what} in `)));
    expect(unseen.map((n) => n.what)).toEqual([]);

    const result = await eraseArchive(storage, { table: 'users', keys: [SUBJECT], reason: null, actor: 't' });
    expect(result.rowsRemoved).toBe(3);
    expect(dataFilesEnding(storage, '~1.parquet')).toHaveLength(3);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.erased).toBe(3);
    expect(report.rows).toBe(9);

    expect(await traces(storage)).toEqual([]);
    // The other rows of the rewritten files are intact.
    const files = await collect(openCatalog(storage).listFiles('users'));
    const rows = (await Promise.all(files.map((f) => readArchiveFile(storage, f.path)))).flat();
    expect(rows).toHaveLength(9);
    expect(rows.every((r) => r.record?.dynamodb.Keys.pk?.S !== 'subject-7f3a9c')).toBe(true);
  });

  it('erases from both formats of a switched archive, and verify still catches an altered generation', async () => {
    const storage = await archive(2);
    const result = await eraseArchive(storage, { table: 'users', keys: [SUBJECT], reason: null, actor: 't' });
    expect(result.rowsRemoved).toBe(3);
    expect(dataFilesEnding(storage, '~1.avro').length).toBeGreaterThan(0);
    expect(dataFilesEnding(storage, '~1.parquet').length).toBeGreaterThan(0);
    expect((await verifyArchive(storage)).findings).toEqual([]);
    const [generation] = dataFilesEnding(storage, '~1.parquet');
    const body = Buffer.from(storage.objects.get(generation as string) as Buffer);
    body[body.length - 20] = (body[body.length - 20] as number) ^ 0x80;
    storage.objects.set(generation as string, body);
    expect(await findingKinds(storage)).toEqual(['altered-file']);
  });
});
