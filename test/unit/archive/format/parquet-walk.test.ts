import fc from 'fast-check';
import { parquetColumns, type ColumnData } from '../../../../archive/format/parquet-rows';
import { walkRowChunks } from '../../../../archive/format/parquet-walk';
import type { TableTtlSettings } from '../../../../policy/settings';
import {
  archivedRecordType,
  toArchived,
  toAvroArchived,
  type ArchivedRecord,
  type AttributeMap,
  type AvroArchivedRecord,
} from '../../../../schemas';
import { removeRow, retractRowAt } from '../../../support/archive-fixture';
import { sizedMap, streamRecordBytes } from '../../../support/avro-blocks';
import { recordArb } from '../../../support/stream-samples';
import type { DataFileContext } from '../../../../archive/format/types';

const ttl: TableTtlSettings = {
  policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
  legalHoldAttribute: 'hold',
};

/** Every AttributeValue type, with text JSON must escape and numbers plain JSON respells. */
const EVERY_TYPE: AttributeMap = {
  s: { S: 'héllo "quoted" \\ \n\t\b\f\r \u0001\u001f \u2028 😀 end' },
  n: { N: '12345678901234567890.123456789012345678' },
  nSpelled: { N: '1.50' },
  b: { B: Uint8Array.from([0, 255, 1, 2, 3]) },
  ss: { SS: ['z', 'a"b', 'm'] },
  ns: { NS: ['10', '-0.5', '1E+3'] },
  bs: { BS: [Uint8Array.from([1]), Uint8Array.from([2, 3])] },
  m: {
    M: {
      inner: { M: { deep: { L: [{ S: 'x' }, { N: '2' }, { NULL: true }, { BOOL: false }] } } },
      e: { M: {} },
    },
  },
  l: { L: [{ SS: ['q'] }, { B: Uint8Array.from([9]) }, { L: [] }] },
  nul: { NULL: true },
  bool: { BOOL: true },
  'näme "odd"': { S: '' },
  __proto__x: { S: 'not special' },
  expiresAt: { N: '1700000000' },
  hold: { BOOL: false },
};

function rowsOf(images: AttributeMap[]): ArchivedRecord[] {
  const rows = images.map((image, i) =>
    removeRow(
      {
        table: 'orders',
        keys: { pk: { S: `customer#${i}` }, sk: { N: String(i) } },
        image,
        deletedAtS: 1_700_000_100,
      },
      { offset: BigInt(i) },
    ),
  );
  const first = rows[0];
  return first ? [...rows, retractRowAt(images.length, first, 1_700_000_201_000)] : rows;
}

function avroRowsOf(rows: ArchivedRecord[]): Uint8Array {
  return Buffer.concat(rows.map((r) => archivedRecordType.toBuffer(toAvroArchived(r))));
}

/** Column values comparable with toEqual (bytes as hex, whatever their class). */
function comparable(columns: ColumnData[]): Array<{ name: string; data: unknown[] }> {
  return columns.map((c) => ({
    name: c.name,
    data: c.data.map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v)),
  }));
}

/** The columns the general way builds (every row decoded) and the walk's, or null when it gave up. */
function bothWays(chunks: Uint8Array[], context: DataFileContext) {
  const decoded: AvroArchivedRecord[] = [];
  for (const chunk of chunks) {
    const buf = Buffer.from(chunk);
    for (let pos = 0; pos < buf.length;) {
      const { value, offset } = archivedRecordType.decode(buf, pos) as {
        value: AvroArchivedRecord;
        offset: number;
      };
      decoded.push(value);
      pos = offset;
    }
  }
  const general = comparable(parquetColumns(decoded, context));
  const walked = walkRowChunks(chunks, context.ttl ? ['expiresAt', 'hold'] : []);
  const fast = walked
    ? comparable(
        parquetColumns(walked.rows, context, { dynamo: walked.dynamoImages, plain: walked.plainImages }),
      )
    : null;
  return { general, fast };
}

describe('walkRowChunks (the image columns from the Avro bytes)', () => {
  it('writes exactly the columns of the decoded rows, for every AttributeValue type and a retraction', () => {
    const rows = rowsOf([EVERY_TYPE, { note: { S: 'second' }, expiresAt: { N: '1.7e9' } }]);
    for (const context of [{ ttl }, { ttl: null }]) {
      const { general, fast } = bothWays([avroRowsOf(rows)], context);
      expect(fast).not.toBeNull();
      expect(fast).toEqual(general);
    }
  });

  it('reads rows across chunks, and images longer than the rows (escapes, base64) whole', () => {
    const long = {
      s: { S: '\n'.repeat(5000) },
      b: { B: new Uint8Array(9000).fill(7) },
      expiresAt: { N: '1' },
    };
    const rows = rowsOf([long, EVERY_TYPE, long, long]);
    const chunks = [avroRowsOf(rows.slice(0, 2)), avroRowsOf(rows.slice(2))];
    const { general, fast } = bothWays(chunks, { ttl });
    expect(fast).not.toBeNull();
    expect(fast).toEqual(general);
  });

  it('reads maps written in blocks that give their size (other Avro writers do) as the general way does', () => {
    const rows = rowsOf([EVERY_TYPE, { note: { S: 'second' }, expiresAt: { N: '1.7e9' } }]);
    const sized = Buffer.concat(
      rows.map((row) => {
        const avro = toAvroArchived(row);
        if (!avro.record) return archivedRecordType.toBuffer(avro);
        // The row with neither body ends in its two null branches: the record goes between them.
        const head = archivedRecordType.toBuffer({ ...avro, record: null, retraction: null });
        const record = streamRecordBytes(avro.record, sizedMap);
        return Buffer.concat([head.subarray(0, head.length - 2), Buffer.from([2]), record, Buffer.from([0])]);
      }),
    );
    expect(sized.equals(Buffer.from(avroRowsOf(rows)))).toBe(false);
    const { general, fast } = bothWays([sized], { ttl });
    expect(fast).not.toBeNull();
    expect(fast).toEqual(general);
  });

  it('gives up where JavaScript would reorder the keys, and on rows cut short', () => {
    const indexLike = avroRowsOf(rowsOf([{ '7': { S: 'index-like' }, a: { S: 'x' } }]));
    expect(walkRowChunks([indexLike], [])).toBeNull();
    const whole = avroRowsOf(rowsOf([{ a: { S: 'x' } }]));
    expect(walkRowChunks([whole.subarray(0, whole.length - 3)], [])).toBeNull();
  });

  it('decodes text that is not UTF-8 as the general way does (U+FFFD)', () => {
    const bad = Buffer.from(avroRowsOf(rowsOf([{ a: { S: 'QQ' } }])));
    const at = bad.indexOf('QQ');
    bad[at] = 0xff;
    bad[at + 1] = 0xfe;
    const { general, fast } = bothWays([bad], { ttl });
    expect(fast).not.toBeNull();
    expect(fast).toEqual(general);
    const item = fast?.find((c) => c.name === 'item')?.data[0];
    expect(item).toContain(Buffer.from('"\ufffd\ufffd"').toString('hex'));
  });

  it('copies text JSON needs no escape in as it is, and escapes or decodes the rest as JSON.stringify does', () => {
    const texts = [
      'plain words, digits 0123 and {braces} [brackets] /slashes/ ~ \u007f',
      'naïve café 😀 \u2028 \u2029 \ufeff at the end',
      '\ufeffa leading byte-order mark',
      'ünïcode and a "quote"',
      'ascii and a back\\slash',
      'a tab\there',
      '',
    ];
    const image: AttributeMap = { expiresAt: { N: '1' } };
    texts.forEach((text, i) => {
      image[`s${i}`] = { S: text };
      image[`ss${i}`] = { SS: [text || 'x', 'other'] };
    });
    const { general, fast } = bothWays([avroRowsOf(rowsOf([image]))], { ttl });
    expect(fast).not.toBeNull();
    expect(fast).toEqual(general);
  });

  it('agrees with the decoded rows on random records', () => {
    let walked = 0;
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 4 }), (records) => {
        const rows = records.map((record, i) =>
          toArchived(
            { kind: 'remove', record },
            { topic: 't', partition: 0, offset: String(i), timestamp: '1700000000000' },
          ),
        );
        const { general, fast } = bothWays([avroRowsOf(rows)], { ttl });
        if (fast === null) return;
        walked += 1;
        expect(fast).toEqual(general);
      }),
      { numRuns: 300 },
    );
    // Most random images have no key that starts with a digit: the comparison above ran on them.
    expect(walked).toBeGreaterThan(100);
  });
});
