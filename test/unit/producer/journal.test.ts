import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { imageHash } from '../../../pipeline/image';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  deleteJournalRows,
  journalRows,
  mergeJournalRows,
  newBatchId,
  type Intent,
} from '../../../producer/journal';
import { addressOf } from '../../../pipeline/marks';

type Item = Record<string, AttributeValue>;

function intent(pk: string, over: Partial<Intent> = {}): Intent {
  return {
    address: addressOf('orders', { pk: { S: pk } }, 4),
    eventID: `e-${pk}`,
    imageHash: `h-${pk}`,
    sequenceNumber: '000001700000000000001',
    decidedAtMs: 1_700_000_000_000,
    state: 'INTENT',
    ...over,
  };
}

const sk = (pk: string): string => addressOf('orders', { pk: { S: pk } }, 4).sk;

describe('producer journal', () => {
  it('round-trips a version, binary keys and a correction image included', () => {
    const image: Item = { pk: { B: new Uint8Array([1, 2, 3]) }, note: { S: 'touched' }, ttl: { N: '5' } };
    const a: Intent = {
      ...intent('a'),
      address: addressOf('bin', { pk: { B: new Uint8Array([1, 2, 3]) } }, 4),
      state: 'DELETED',
      correction: {
        eventID: 'e2',
        imageHash: imageHash(image),
        sequenceNumber: '000001700000000000009',
        image,
      },
    };
    const b = intent('b', { state: 'PUBLISHED' });
    const rows = journalRows(2, newBatchId(1000), 1, [a, b]);
    expect(rows).toHaveLength(1);
    const { intents, rowKeys } = mergeJournalRows(2, rows);
    expect(rowKeys).toHaveLength(1);
    expect(intents.get(a.address.sk)).toEqual({ ...a, address: { ...a.address, shard: 2 } });
    expect(intents.get(b.address.sk)).toEqual({ ...b, address: { ...b.address, shard: 2 } });
  });

  it('splits a large journal into parts and reads it back only when every part is there', () => {
    const big = Array.from({ length: 1000 }, (_, i) =>
      intent(`k${i}-${randomBytes(600).toString('base64')}`, { eventID: randomBytes(16).toString('hex') }),
    );
    const rows = journalRows(0, newBatchId(1000), 1, big);
    expect(rows.length).toBeGreaterThan(1);
    for (const r of rows) expect((r.doc?.B as Uint8Array).length).toBeLessThanOrEqual(300 * 1024);
    expect(mergeJournalRows(0, rows).intents.size).toBe(1000);
    // A version cut short by a crash is not read (nothing of a first version is published before it is whole).
    expect(mergeJournalRows(0, rows.slice(1)).intents.size).toBe(0);
  });

  it('takes the highest complete version of a batch', () => {
    const id = newBatchId(1000);
    const v1 = journalRows(0, id, 1, [intent('a'), intent('b')]);
    const v2 = journalRows(0, id, 2, [
      intent('a', { state: 'PUBLISHED' }),
      intent('b', { state: 'PUBLISHED' }),
    ]);
    const v3 = journalRows(0, id, 3, [
      intent('a', { state: 'DELETED' }),
      intent('b', { state: 'PUBLISHED' }),
    ]);
    const merged = mergeJournalRows(0, [...v1, ...v3, ...v2]);
    expect(merged.intents.get(sk('a'))?.state).toBe('DELETED');
    expect(merged.intents.get(sk('b'))?.state).toBe('PUBLISHED');
    expect(merged.rowKeys).toHaveLength(3);
  });

  it('across batches, one deletion keeps its most advanced state and a later deletion replaces an earlier one', () => {
    const older = newBatchId(1000);
    const newer = newBatchId(2000);
    expect(newer > older).toBe(true);
    const image: Item = { pk: { S: 'a' } };
    const correction = { eventID: 'c', imageHash: imageHash(image), sequenceNumber: '1', image };
    const merged = mergeJournalRows(0, [
      ...journalRows(0, newer, 1, [intent('a', { state: 'INTENT' }), intent('b', { eventID: 'e-b-2' })]),
      ...journalRows(0, older, 3, [
        intent('a', { state: 'DELETED', correction }),
        intent('b', { state: 'PUBLISHED' }),
      ]),
    ]);
    expect(merged.intents.get(sk('a'))).toMatchObject({ state: 'DELETED', correction });
    expect(merged.intents.get(sk('b'))).toMatchObject({ eventID: 'e-b-2', state: 'INTENT' });
  });

  it('batch ids sort by time', () => {
    const ids = [5, 1_000, 99_999_999_999_999].map(newBatchId);
    expect([...ids].sort()).toEqual(ids);
  });

  it('a RETRACTED deletion outranks every earlier state of it and keeps its reason', () => {
    const older = journalRows(0, newBatchId(1000), 1, [intent('a', { state: 'PUBLISHED' })]);
    const newer = journalRows(0, newBatchId(2000), 1, [
      intent('a', {
        state: 'RETRACTED',
        retractReason: 'item-changed',
        markRow: 'orders#@000000000001000-ab',
      }),
    ]);
    for (const rows of [
      [...older, ...newer],
      [...newer, ...older],
    ]) {
      expect(mergeJournalRows(0, rows).intents.get(sk('a'))).toMatchObject({
        state: 'RETRACTED',
        retractReason: 'item-changed',
        markRow: 'orders#@000000000001000-ab',
      });
    }
  });

  it("deletes rows oldest batch first and a batch's latest version last, one request after another", async () => {
    // A crash part-way must never leave an older row readable without the newer one that retracted its deletion.
    const a = newBatchId(1000);
    const b = newBatchId(2000);
    const rows = [
      ...journalRows(0, b, 2, [intent('x', { state: 'RETRACTED' })]),
      ...journalRows(0, a, 1, [intent('x')]),
      ...journalRows(0, b, 1, [intent('x')]),
      ...journalRows(0, a, 2, [intent('x', { state: 'PUBLISHED' })]),
    ].map((r) => ({ pk: r.pk as AttributeValue, sk: r.sk as AttributeValue }));
    const order: string[][] = [];
    let inFlight = 0;
    const ddb = {
      send: async (cmd: {
        input: { RequestItems: Record<string, Array<{ DeleteRequest: { Key: Item } }>> };
      }) => {
        inFlight++;
        expect(inFlight).toBe(1);
        await new Promise((r) => setTimeout(r, 1));
        order.push(
          Object.values(cmd.input.RequestItems)
            .flat()
            .map((w) => w.DeleteRequest.Key.sk?.S as string),
        );
        inFlight--;
        return {};
      },
    } as unknown as DynamoDBClient;
    await deleteJournalRows(ddb, 'marks', rows);
    const version = (s: string): string => s.replace(/#\d+$/, '');
    expect(order.map((req) => req.map(version))).toEqual([
      [`${a}#v001`],
      [`${a}#v002`],
      [`${b}#v001`],
      [`${b}#v002`],
    ]);
  });

  it('deletes the rows given along in the first request, before any latest version', async () => {
    // A batch's finished mark rows must be gone before its latest journal version (a mark must not outlive the
    // decision taken on it, 0009); they share the first request instead of taking one of their own.
    const a = newBatchId(1000);
    const b = newBatchId(2000);
    const keyOf = (r: Record<string, AttributeValue>) => ({
      pk: r.pk as AttributeValue,
      sk: r.sk as AttributeValue,
    });
    const rows = [
      ...journalRows(0, a, 1, [intent('x')]),
      ...journalRows(0, a, 2, [intent('x', { state: 'PUBLISHED' })]),
      ...journalRows(0, b, 1, [intent('y')]),
    ].map(keyOf);
    const markRow = { pk: { S: 'shard#0' }, sk: { S: 'orders#@000000000001000-ab' } };
    const order: string[][] = [];
    const ddb = {
      send: async (cmd: {
        input: { RequestItems: Record<string, Array<{ DeleteRequest: { Key: Item } }>> };
      }) => {
        order.push(
          Object.values(cmd.input.RequestItems)
            .flat()
            .map((w) => w.DeleteRequest.Key.sk?.S as string)
            .sort(),
        );
        return {};
      },
    } as unknown as DynamoDBClient;
    await deleteJournalRows(ddb, 'marks', rows, [markRow]);
    const version = (s: string): string => s.replace(/#\d+$/, '');
    expect(order.map((req) => req.map(version))).toEqual([
      [`${a}#v001`, 'orders#@000000000001000-ab'],
      [`${a}#v002`],
      [`${b}#v001`],
    ]);

    // With no journal rows, the rows given along are deleted on their own.
    order.length = 0;
    await deleteJournalRows(ddb, 'marks', [], [markRow]);
    expect(order).toEqual([['orders#@000000000001000-ab']]);
  });
});
