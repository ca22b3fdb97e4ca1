import { InternalError } from '../../../core/errors';
import { SPLICING, dedupKeyOf, prepareRow, rowBuffer } from '../../../archive/rows';
import { manifestOf, planRoll } from '../../../archive/roll';
import {
  archivedRecordType,
  decodeMessage,
  encodeRemove,
  encodeRetraction,
  fromAvroArchived,
  toArchived,
  type ArchivedRecord,
} from '../../../schemas';
import { makeRecord, removeRowAt, retractRowAt } from '../../support/archive-fixture';

const TOPIC = 'stream';
const H10 = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

describe('roll planning', () => {
  it('prepares a row: Avro bytes that decode back, its key index entry and dedup key', () => {
    const row = removeRowAt(TOPIC, 'orders', 4, H10 + 5);
    const p = prepareRow(row);
    expect(fromAvroArchived(archivedRecordType.fromBuffer(rowBuffer(p.avro)))).toEqual(row);
    expect(p.dedupKey).toBe(dedupKeyOf('remove', row.eventID));
    expect(p.index).toEqual({
      key: '{"pk":{"S":"item-4"},"sk":{"N":"4"}}',
      eventID: row.eventID,
      kind: 'remove',
      deletedAtMs: (H10 + 5) * 1000,
      sequenceNumber: row.record?.dynamodb.SequenceNumber,
    });
    const x = prepareRow(retractRowAt(5, row, Date.UTC(2024, 4, 1, 12, 1)));
    expect(x.dedupKey).toBe(dedupKeyOf('retract', row.eventID));
    expect(x.dedupKey).not.toBe(p.dedupKey);
    expect(x.index).toMatchObject({
      kind: 'retract',
      eventID: row.eventID,
      retractsEventID: row.eventID,
      sequenceNumber: '',
    });
  });

  it('copies the bytes of a current-schema Avro message into the row: the same row as re-encoding', () => {
    expect(SPLICING).toBe(true);
    const record = makeRecord('orders', 9, H10 + 9, 300);
    const msg = encodeRemove(record, 'avro');
    const fingerprint = msg.headers['ttlstream-schema-fingerprint'] as string;
    const row = toArchived(decodeMessage(msg.value, msg.headers), {
      topic: TOPIC,
      partition: 3,
      offset: '77',
      timestamp: '123',
    });
    const spliced = prepareRow(row, { value: msg.value, fingerprint });
    const encoded = prepareRow(row);
    expect(fromAvroArchived(archivedRecordType.fromBuffer(rowBuffer(spliced.avro)))).toEqual(
      fromAvroArchived(archivedRecordType.fromBuffer(rowBuffer(encoded.avro))),
    );
    expect(fromAvroArchived(archivedRecordType.fromBuffer(rowBuffer(spliced.avro)))).toEqual(row);
    // A retraction (Avro) too; an unknown fingerprint falls back to encoding.
    const rmsg = encodeRetraction(
      {
        eventName: 'RETRACT',
        retractsEventID: record.eventID,
        table: 'orders',
        Keys: record.dynamodb.Keys,
        reason: 'item-changed',
        retractedAt: 5,
      },
      'avro',
    );
    const rrow = toArchived(decodeMessage(rmsg.value, rmsg.headers), {
      topic: TOPIC,
      partition: 3,
      offset: '78',
      timestamp: '124',
    });
    const rspliced = prepareRow(rrow, {
      value: rmsg.value,
      fingerprint: rmsg.headers['ttlstream-schema-fingerprint'] as string,
    });
    expect(fromAvroArchived(archivedRecordType.fromBuffer(rowBuffer(rspliced.avro)))).toEqual(rrow);
    const fallback = prepareRow(row, { value: Buffer.from('not used'), fingerprint: '00'.repeat(32) });
    expect(fallback.avro).toEqual(encoded.avro);
  });

  it('groups one range into one file per (table, UTC hour), rows in offset order, files sorted', () => {
    const rows = [
      removeRowAt(TOPIC, 'orders', 10, H10 + 1),
      removeRowAt(TOPIC, 'users', 11, H10 + 2),
      removeRowAt(TOPIC, 'orders', 12, H10 + 3600),
      removeRowAt(TOPIC, 'orders', 14, H10 + 3599),
    ];
    const retract = retractRowAt(15, rows[0] as ArchivedRecord, (H10 + 3600 + 7) * 1000);
    const plan = planRoll(
      TOPIC,
      1,
      10n,
      16n,
      [...rows, retract].map((r) => prepareRow(r)),
    );
    expect(plan.files.map((f) => f.path)).toEqual([
      'table=orders/date=2024-05-01/hour=10/stream+1+00000000000000000010-00000000000000000016.avro',
      'table=orders/date=2024-05-01/hour=11/stream+1+00000000000000000010-00000000000000000016.avro',
      'table=users/date=2024-05-01/hour=10/stream+1+00000000000000000010-00000000000000000016.avro',
    ]);
    expect(plan.files.map((f) => f.rows.map((r) => Number(r.offset)))).toEqual([[10, 14], [12, 15], [11]]);
    expect(plan.files[1]?.index.rows.map((r) => [r.row, r.kind])).toEqual([
      [0, 'remove'],
      [1, 'retract'],
    ]);
    expect(plan.files[0]?.index).toMatchObject({
      table: 'orders',
      topic: TOPIC,
      partition: 1,
      first: '10',
      last: '16',
    });
    expect(plan.records).toBe(5);
    expect(plan.manifestPath).toBe('_manifest/stream/1/00000000000000000010-00000000000000000016.json');
    expect(manifestOf(plan, 'writing')).toEqual({
      state: 'writing',
      first: '10',
      last: '16',
      files: plan.files.map((f) => f.path),
      records: 5,
    });
  });

  it('plans an empty roll (all poison or duplicates) as a manifest without files', () => {
    const plan = planRoll(TOPIC, 0, 3n, 9n, []);
    expect(plan.files).toEqual([]);
    expect(manifestOf(plan, 'complete')).toEqual({
      state: 'complete',
      first: '3',
      last: '9',
      files: [],
      records: 0,
    });
  });

  it('refuses rows outside the range or out of order, and empty ranges', () => {
    const a = prepareRow(removeRowAt(TOPIC, 'orders', 5, H10));
    const b = prepareRow(removeRowAt(TOPIC, 'orders', 6, H10));
    expect(() => planRoll(TOPIC, 0, 6n, 9n, [a])).toThrow(InternalError);
    expect(() => planRoll(TOPIC, 0, 0n, 5n, [b])).toThrow(InternalError);
    expect(() => planRoll(TOPIC, 0, 0n, 9n, [b, a])).toThrow(InternalError);
    expect(() => planRoll(TOPIC, 0, 5n, 4n, [])).toThrow(InternalError);
  });

  it('names the same files for the same range and rows (a redo replaces, never duplicates)', () => {
    const rows = [removeRowAt(TOPIC, 'orders', 1, H10), removeRowAt(TOPIC, 'users', 2, H10)];
    const a = planRoll(
      TOPIC,
      2,
      0n,
      2n,
      rows.map((r) => prepareRow(r)),
    );
    const b = planRoll(
      TOPIC,
      2,
      0n,
      2n,
      rows.map((r) => prepareRow(r)),
    );
    expect(b.files.map((f) => f.path)).toEqual(a.files.map((f) => f.path));
    expect(b.manifestPath).toBe(a.manifestPath);
  });
});
