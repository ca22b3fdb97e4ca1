import type { DynamoDBClient, StreamViewType } from '@aws-sdk/client-dynamodb';
import { TtlSettingsStore } from '../../control/settings-store';
import { dynamodbTtl } from './ttl-settings';
import { createTestTable, uniqueName } from './stack';

/**
 * A uniquely named table on moto's server with a stream (`view`; none when null), whose TTL is enabled on
 * `attribute` with DynamoDB's own TTL as the deleter, in the control table `control` (on the same server): what the
 * streams role follows. Added to `made`, the suite's list of tables to delete.
 */
export async function followedTable(
  moto: DynamoDBClient,
  control: string,
  prefix: string,
  made: string[],
  { view = 'OLD_IMAGE', attribute = 'expiresAt' }: { view?: StreamViewType | null; attribute?: string } = {},
): Promise<string> {
  const table = await createTestTable(moto, uniqueName(prefix), { hashKey: 'pk' }, view ?? undefined);
  made.push(table);
  await new TtlSettingsStore(moto, { controlTable: control, propagationMs: 0 }).update(
    table,
    { enabled: true, settings: { ...dynamodbTtl(attribute), deleter: 'dynamodb' } },
    'test',
  );
  return table;
}
