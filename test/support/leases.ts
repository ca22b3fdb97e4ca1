import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TtlstreamConfig } from '../../core/config';
import { scanTable } from './stack';

/** The leases of the control table that have not expired: name (`lease#<kind>#<unit>`) → owner. */
export async function liveLeases(env: {
  ddb: DynamoDBClient;
  config: TtlstreamConfig;
}): Promise<Map<string, string>> {
  const rows = await scanTable(env.ddb, env.config.tables.control, {
    FilterExpression: 'begins_with(pk, :l)',
    ExpressionAttributeValues: { ':l': { S: 'lease#' } },
  });
  const now = Date.now();
  const leases = new Map<string, string>();
  for (const row of rows)
    if (Number(row.expiresAt?.N ?? 0) > now) leases.set(row.pk?.S ?? '', row.owner?.S ?? '');
  return leases;
}

/** The owners of the live leases of `kind` (scan, marks, ...). */
export function ownersOf(leases: Map<string, string>, kind: string): Set<string> {
  return new Set([...leases].filter(([name]) => name.split('#')[1] === kind).map(([, owner]) => owner));
}
