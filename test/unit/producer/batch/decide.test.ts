import { BatchGetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { addressOf } from '../../../../pipeline/marks';
import type { BatchContext, LiveEntry } from '../../../../producer/batch/state';
import { readItems } from '../../../../producer/batch/decide';

type Item = Record<string, AttributeValue>;

/** A server that keeps numbers as written (moto): a BatchGetItem answers with the item as stored, whatever was asked. */
function storing(stored: Item[]): { ddb: DynamoDBClient; asked: Item[][] } {
  const asked: Item[][] = [];
  const ddb = {
    send: async (command: unknown) => {
      if (!(command instanceof BatchGetItemCommand)) throw new Error('only BatchGetItem expected');
      const [[table, request]] = Object.entries(command.input.RequestItems ?? {}) as [
        [string, { Keys: Item[] }],
      ];
      asked.push(request.Keys);
      return { Responses: { [table]: stored } };
    },
  } as unknown as DynamoDBClient;
  return { ddb, asked };
}

const settings = { policy: { mode: 'dynamodb' as const, attributeName: 'ttl' } };

function entry(keys: Item): LiveEntry {
  return { address: addressOf('orders', keys, 4), marks: [], done: false, settings };
}

describe('step 1: reading the marked items', () => {
  it('matches a read that spells a number key otherwise, and names the item by the key as read from then on', async () => {
    const stored: Item = { pk: { S: 'a' }, sk: { N: '1e3' }, ttl: { N: '1700000000' } };
    const { ddb, asked } = storing([stored]);
    // The scanner's Scan under a projection returned the key re-spelled (moto's server does).
    const marked = entry({ pk: { S: 'a' }, sk: { N: '1E+3' } });
    const sk = marked.address.sk;
    await readItems({ ddb } as unknown as BatchContext, [marked]);
    // The read asked with the key as the scan returned it, and found the item.
    expect(asked).toEqual([[{ pk: { S: 'a' }, sk: { N: '1E+3' } }]]);
    expect(marked.read?.item).toEqual(stored);
    // The delete, the journal and the records will name it as the consistent read returned it; its identity stays.
    expect(marked.address.keys).toEqual({ pk: { S: 'a' }, sk: { N: '1e3' } });
    expect(marked.address.sk).toBe(sk);
  });

  it('leaves an item the read did not return unread, its key as marked', async () => {
    const { ddb } = storing([]);
    const marked = entry({ pk: { S: 'gone' }, sk: { N: '1' } });
    await readItems({ ddb } as unknown as BatchContext, [marked]);
    expect(marked.read).toBeUndefined();
    expect(marked.address.keys).toEqual({ pk: { S: 'gone' }, sk: { N: '1' } });
  });
});
