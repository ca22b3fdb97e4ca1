import { ValidationError } from '../../../../core/errors';
import {
  dataFilePath,
  formatOfPath,
  decodeSegment,
  besideIndexPathFor,
  dataPathOfIndex,
  indexListingPrefix,
  indexPathFor,
  indexPathsOf,
  isBesideIndexPath,
  lossPath,
  manifestPath,
  manifestPrefix,
  pad20,
  parseDataFilePath,
  generationPath,
  parseManifestPath,
  utcDateHour,
} from '../../../../archive/storage';

describe('archive layout', () => {
  const at = Date.UTC(2024, 0, 31, 23, 59, 59, 999);

  it('names a data file by table, UTC deletion hour, topic, partition and zero-padded offsets', () => {
    const path = dataFilePath({
      table: 'orders',
      topic: 'ttlstream.remove',
      partition: 3,
      deletedAtMs: at,
      first: '7',
      last: 12345n,
    });
    expect(path).toBe(
      'table=orders/date=2024-01-31/hour=23/ttlstream%2Eremove+3+00000000000000000007-00000000000000012345.avro',
    );
    // Key indexes live under _index/, outside the folders query engines read; older archives keep them beside.
    expect(indexPathFor(path)).toBe(`_index/${path}.idx.json`);
    expect(besideIndexPathFor(path)).toBe(`${path}.idx.json`);
    expect(indexPathsOf(path)).toEqual([`_index/${path}.idx.json`, `${path}.idx.json`]);
    expect(dataPathOfIndex(indexPathFor(path))).toBe(path);
    expect(dataPathOfIndex(besideIndexPathFor(path))).toBe(path);
    expect(dataPathOfIndex(path)).toBeNull();
    expect([isBesideIndexPath(indexPathFor(path)), isBesideIndexPath(besideIndexPathFor(path))]).toEqual([
      false,
      true,
    ]);
    expect(indexPathFor(path).startsWith(indexListingPrefix('table=orders/date=2024-01-31/'))).toBe(true);
    expect(parseDataFilePath(path)).toEqual({
      tableSegment: 'orders',
      date: '2024-01-31',
      hour: '23',
      topicSegment: 'ttlstream%2Eremove',
      partition: 3,
      first: 7n,
      last: 12345n,
      generation: 0,
      base: path,
      format: 'avro',
      compaction: null,
    });
    expect(parseDataFilePath(indexPathFor(path))).toBeNull();
  });

  it('names a Parquet data file the same way, with its generations, and tells the format by the name', () => {
    const path = dataFilePath({
      table: 'orders',
      topic: 't',
      partition: 0,
      deletedAtMs: Date.UTC(2024, 0, 31, 23, 0),
      first: 1,
      last: 2,
      format: 'parquet',
    });
    expect(path).toBe(
      'table=orders/date=2024-01-31/hour=23/t+0+00000000000000000001-00000000000000000002.parquet',
    );
    expect(formatOfPath(path)).toBe('parquet');
    const g2 = generationPath(path, 2);
    expect(g2).toBe(
      'table=orders/date=2024-01-31/hour=23/t+0+00000000000000000001-00000000000000000002~2.parquet',
    );
    expect(parseDataFilePath(g2)).toMatchObject({ generation: 2, base: path, format: 'parquet' });
    expect(parseDataFilePath(`${path}.idx.json`)).toBeNull();
    expect(parseDataFilePath(path.replace('.parquet', '.csv'))).toBeNull();
  });

  it('names generations of a rewritten file beside it, sorting after it, and parses them back to it', () => {
    const base = dataFilePath({
      table: 'orders',
      topic: 't',
      partition: 0,
      deletedAtMs: at,
      first: 0,
      last: 9,
    });
    const g2 = generationPath(base, 2);
    expect(g2).toBe(base.replace(/\.avro$/, '~2.avro'));
    expect(generationPath(base, 0)).toBe(base);
    expect(parseDataFilePath(g2)).toMatchObject({ generation: 2, base, first: 0n, last: 9n });
    expect(parseDataFilePath(indexPathFor(g2))).toBeNull();
    expect(parseDataFilePath(besideIndexPathFor(g2))).toBeNull();
    expect(parseDataFilePath(base.replace(/\.avro$/, '~0.avro'))).toBeNull();
    expect(parseDataFilePath(base.replace(/\.avro$/, '~x.avro'))).toBeNull();
    // Listed after the base file and its index (beside, as listWithIndexes orders both places), so a listing
    // meets a file's generations together.
    expect([g2, besideIndexPathFor(base), base].sort()).toEqual([base, besideIndexPathFor(base), g2]);
    expect(() => generationPath(base, -1)).toThrow(ValidationError);
  });

  it('puts the hour boundary where UTC puts it', () => {
    expect(utcDateHour(Date.UTC(2024, 1, 29, 0, 0, 0, 0))).toEqual({ date: '2024-02-29', hour: '00' });
    expect(utcDateHour(Date.UTC(2024, 1, 28, 23, 59, 59, 999))).toEqual({ date: '2024-02-28', hour: '23' });
    expect(() => utcDateHour(-1)).toThrow(ValidationError);
    expect(() => utcDateHour(Number.NaN)).toThrow(ValidationError);
    expect(() => utcDateHour(253_402_300_800_000)).toThrow(ValidationError);
  });

  it('keeps hostile table and topic names inside their segment', () => {
    const path = dataFilePath({
      table: '../../etc',
      topic: 'a/b+1+2',
      partition: 0,
      deletedAtMs: at,
      first: 0,
      last: 0,
    });
    const parsed = parseDataFilePath(path);
    expect(parsed).not.toBeNull();
    expect(decodeSegment(parsed?.tableSegment ?? '')).toBe('../../etc');
    expect(decodeSegment(parsed?.topicSegment ?? '')).toBe('a/b+1+2');
    expect(path.split('/')).toHaveLength(4);
  });

  it('names manifests and loss records so they sort by offset', () => {
    expect(manifestPrefix('t.x', 2)).toBe('_manifest/t%2Ex/2/');
    const a = manifestPath('t', 0, 9n, 10n);
    const b = manifestPath('t', 0, 11n, 100n);
    expect(a < b).toBe(true);
    expect(parseManifestPath(b)).toEqual({ first: 11n, last: 100n });
    expect(lossPath('t', 1, 5n, 6n)).toBe('_loss/t/1/00000000000000000005-00000000000000000006.json');
  });

  it('refuses offsets and partitions that are not', () => {
    expect(pad20('9223372036854775807')).toBe('09223372036854775807');
    expect(() => pad20('-1')).toThrow(ValidationError);
    expect(() => pad20('1e3')).toThrow(ValidationError);
    expect(() => manifestPath('t', -1, 0n, 0n)).toThrow(ValidationError);
    expect(() => manifestPath('t', 1.5, 0n, 0n)).toThrow(ValidationError);
  });
});
