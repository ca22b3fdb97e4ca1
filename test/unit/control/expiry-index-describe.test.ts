import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describeExpiryIndex } from '../../../control/expiry-index';
import { EXPIRY_INDEX_NAME } from '../../../policy/expiry-index';

describe('describeExpiryIndex is read-only (ttl describe, status)', () => {
  it('never creates the control table: a missing one holds no completion row (BACKFILLING)', async () => {
    const sent: string[] = [];
    const ddb = {
      send: async (command: object) => {
        const name = command.constructor.name;
        sent.push(name);
        if (name === 'DescribeTableCommand')
          return {
            Table: { GlobalSecondaryIndexes: [{ IndexName: EXPIRY_INDEX_NAME, IndexStatus: 'ACTIVE' }] },
          };
        if (name === 'GetItemCommand')
          throw Object.assign(new Error('Requested resource not found'), {
            name: 'ResourceNotFoundException',
          });
        throw new Error(`unexpected ${name}`);
      },
    } as unknown as DynamoDBClient;
    await expect(describeExpiryIndex(ddb, 'no_such_control', 'orders')).resolves.toEqual({
      status: 'BACKFILLING',
    });
    expect(sent).toEqual(['DescribeTableCommand', 'GetItemCommand']);
  });
});
