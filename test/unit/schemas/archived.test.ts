import type avsc from 'avsc';
import fc from 'fast-check';
import {
  PoisonRecordError,
  archivedRecordType,
  createArchiveDecoder,
  createArchiveEncoder,
  decodeMessage,
  encodeRemove,
  encodeRetraction,
  fingerprintOf,
  fromAvroArchived,
  retractionType,
  streamRecordType,
  toArchived,
  toAvroArchived,
  type ArchivedRecord,
  type AvroArchivedRecord,
} from '../../../schemas';
import { recordArb, sampleRecord, sampleRetraction } from '../../support/stream-samples';

async function writeAndReadContainer(rows: AvroArchivedRecord[]): Promise<unknown[]> {
  const encoder = createArchiveEncoder();
  const decoder = createArchiveDecoder();
  const out: unknown[] = [];
  const done = new Promise<void>((resolve, reject) => {
    decoder.on('data', (row: unknown) => out.push(row));
    decoder.on('end', resolve);
    decoder.on('error', reject);
    encoder.on('error', reject);
  });
  encoder.pipe(decoder);
  for (const row of rows) encoder.write(row);
  encoder.end();
  await done;
  return out;
}

const at = (offset: number) => ({
  topic: 'ttlstream.remove',
  partition: 3,
  offset: String(offset),
  timestamp: '1700000001234',
});

describe('archive rows', () => {
  it('round-trip removes and retractions through an Avro container file', async () => {
    const records = fc.sample(recordArb, { numRuns: 50, seed: 42 });
    const rows: ArchivedRecord[] = records.map((r, i) =>
      toArchived(decodeMessage(encodeRemove(r, 'avro').value, encodeRemove(r, 'avro').headers), at(i)),
    );
    const retraction = sampleRetraction(records[0]);
    rows.push(toArchived({ kind: 'retract', retraction }, at(rows.length)));
    const back = (await writeAndReadContainer(rows.map(toAvroArchived))).map((row) =>
      fromAvroArchived(row as AvroArchivedRecord),
    );
    expect(back).toEqual(rows);
    expect(back.at(-1)).toMatchObject({
      kind: 'retract',
      eventID: records[0]?.eventID,
      record: null,
      kafkaTimestamp: 1700000001234,
    });
  });

  it('keep an attribute named __proto__ through a container file (avsc alone would drop it)', async () => {
    const oldImage = Object.fromEntries([
      ['pk', { S: 'a' }],
      ['__proto__', { M: Object.fromEntries([['__proto__', { S: 'nested' }]]) }],
    ]);
    const row = toArchived(
      { kind: 'remove', record: sampleRecord({ keys: { pk: { S: 'a' } }, oldImage }) },
      at(1),
    );
    const [back] = (await writeAndReadContainer([toAvroArchived(row)])).map((r) =>
      fromAvroArchived(r as AvroArchivedRecord),
    );
    expect(Object.keys(back?.record?.dynamodb.OldImage ?? {})).toEqual(['pk', '__proto__']);
    expect(back).toEqual(row);
  });

  it('carry the retracted eventID for a retraction and the table for both', () => {
    const record = sampleRecord();
    const removeRow = toArchived({ kind: 'remove', record }, at(1));
    const retractRow = toArchived(
      decodeMessage(
        encodeRetraction(sampleRetraction(record), 'json').value,
        encodeRetraction(sampleRetraction(record), 'json').headers,
      ),
      at(2),
    );
    expect(removeRow).toMatchObject({
      kind: 'remove',
      table: 'orders',
      eventID: record.eventID,
      retraction: null,
    });
    expect(retractRow).toMatchObject({
      kind: 'retract',
      table: 'orders',
      eventID: record.eventID,
      record: null,
    });
  });

  it('reject rows that break the contract', () => {
    const row = toAvroArchived(toArchived({ kind: 'remove', record: sampleRecord() }, at(1)));
    expect(() => fromAvroArchived({ ...row, kind: 'retract' })).toThrow(PoisonRecordError);
    expect(() => fromAvroArchived({ ...row, eventID: 'other' })).toThrow(PoisonRecordError);
    expect(() => fromAvroArchived({ ...row, table: 'other' })).toThrow(PoisonRecordError);
    expect(() => fromAvroArchived({ ...row, offset: '-1' })).toThrow(PoisonRecordError);
  });

  it('embed exactly the stream-record and retraction schemas', () => {
    const fields = (archivedRecordType as unknown as { fields: { name: string; type: avsc.Type }[] }).fields;
    const branch = (name: string): avsc.Type => {
      const union = fields.find((f) => f.name === name)?.type as unknown as { types: avsc.Type[] };
      return union.types[1] as avsc.Type;
    };
    expect(fingerprintOf(branch('record'))).toBe(fingerprintOf(streamRecordType));
    expect(fingerprintOf(branch('retraction'))).toBe(fingerprintOf(retractionType));
  });
});
