import { parseKeyIndexRows } from '../../../../archive/storage/key-index-rows';
import { KeyIndexSchema, encodeArchiveJson, parseArchiveJson } from '../../../../archive/storage';

const row = {
  key: '{"pk":{"S":"a"}}',
  eventID: 'e1',
  kind: 'remove',
  deletedAtMs: 1_735_689_600_000,
  sequenceNumber: '000000000000000000001',
  row: 0,
};
const index = { file: 'table=orders/x.parquet', table: 'orders', topic: 't', partition: 0, rows: [row] };

/** What the schema says of the same document: its value, or its error. */
function schemaSays(doc: unknown): unknown {
  try {
    return parseArchiveJson(KeyIndexSchema, encodeArchiveJson(doc), 'i.json');
  } catch (err) {
    return (err as Error).message;
  }
}

function fastSays(doc: unknown): unknown {
  try {
    return parseKeyIndexRows(encodeArchiveJson(doc), 'i.json');
  } catch (err) {
    return (err as Error).message;
  }
}

describe('parseKeyIndexRows: the key index schema without its per-row parse', () => {
  it.each([
    ['a valid index', index],
    [
      'a retraction row, a compacted file row',
      { ...index, rows: [{ ...row, kind: 'retract', retractsEventID: 'e0', topic: 't', partition: 2 }] },
    ],
    ['an empty eventID', { ...index, rows: [{ ...row, eventID: '' }] }],
    ['an unknown kind', { ...index, rows: [{ ...row, kind: 'insert' }] }],
    ['a fractional row', { ...index, rows: [{ ...row, row: 1.5 }] }],
    ['a negative partition', { ...index, rows: [{ ...row, partition: -1 }] }],
    ['a deletion time as text', { ...index, rows: [{ ...row, deletedAtMs: '1' }] }],
    ['a null retractsEventID', { ...index, rows: [{ ...row, retractsEventID: null }] }],
    ['a row that is not an object', { ...index, rows: [[row]] }],
    ['rows that are not a list', { ...index, rows: {} }],
    ['no rows', { file: 'x', table: 'orders' }],
    ['a bad head', { ...index, table: '' }],
    ['a document that is a list', [index]],
  ])('%s: as the schema has it (its value, or its error)', (_, doc) => {
    expect(fastSays(doc)).toEqual(schemaSays(doc));
  });

  it('names a body that is not JSON as the schema does', () => {
    expect(() => parseKeyIndexRows(Buffer.from('{"rows": ['), 'i.json')).toThrow(/^i\.json: not JSON/);
  });
});
