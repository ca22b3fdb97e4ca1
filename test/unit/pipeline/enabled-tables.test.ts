import { EnabledTables } from '../../../pipeline/enabled-tables';
import type { TableTtlSettings } from '../../../policy/settings';
import { dynamodbTtl } from '../../support/ttl-settings';

describe('EnabledTables: the tables a deleter deletes from', () => {
  const source = {
    enabledTables: async (): Promise<Array<{ table: string; settings: TableTtlSettings }>> => [
      { table: 'orders', settings: dynamodbTtl('exp') },
      { table: 'sessions', settings: { ...dynamodbTtl('exp'), deleter: 'dynamodb' } },
    ],
  };

  it("ttlstream's scanner and producer leave alone a table whose items DynamoDB's own TTL deletes", async () => {
    expect([...(await new EnabledTables(source, 0).get()).keys()]).toEqual(['orders']);
    expect([...(await new EnabledTables(source, 0, Date.now, 'dynamodb').get()).keys()]).toEqual([
      'sessions',
    ]);
  });
});
