import {
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateTableCommand,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { ConflictError, NotFoundError } from '../core/errors';
import { INTERNAL_KEY, ensureInternalTable } from '../core/tables';
import { EXPIRY_INDEX_NAME, expiryIndexDefinition } from '../policy/expiry-index';
import { relevantAttributes } from '../policy/projection';
import type { TableTtlSettings } from '../policy/settings';

/**
 * The expiry index's life cycle on one table (decision 0011): NONE → CREATING (the GSI is being built by DynamoDB) →
 * BACKFILLING (the GSI is ACTIVE; existing items are being stamped) → ACTIVE (backfill complete: the scanner
 * discovers through the index); DELETING while the GSI is dropped. Never stored as a whole: derived from
 * DescribeTable and the backfill's completion row, so every process agrees.
 */
export type ExpiryIndexStatus = 'NONE' | 'CREATING' | 'BACKFILLING' | 'ACTIVE' | 'DELETING';

export interface ExpiryIndexDescription {
  status: ExpiryIndexStatus;
  /** When the backfill completed (ms), if it did. */
  backfilledAt?: number;
}

const completionKey = (table: string) => ({ [INTERNAL_KEY]: { S: `expiry-index#${table}` } });

/** The status from DescribeTable's output and the completion row. Pure. */
export function expiryIndexStatus(
  table: TableDescription | undefined,
  backfilledAt: number | undefined,
): ExpiryIndexStatus {
  const gsi = (table?.GlobalSecondaryIndexes ?? []).find((g) => g.IndexName === EXPIRY_INDEX_NAME);
  if (!gsi) return 'NONE';
  switch (gsi.IndexStatus) {
    case 'CREATING':
      return 'CREATING';
    case 'DELETING':
      return 'DELETING';
    default:
      // UPDATING (throughput change) and ACTIVE serve queries; DynamoDB's own backfill reports Backfilling.
      if (gsi.Backfilling === true) return 'CREATING';
      return backfilledAt === undefined ? 'BACKFILLING' : 'ACTIVE';
  }
}

export async function describeExpiryIndex(
  ddb: DynamoDBClient,
  controlTable: string,
  table: string,
): Promise<ExpiryIndexDescription> {
  let description: TableDescription | undefined;
  try {
    description = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
  } catch (err) {
    if ((err as { name?: string }).name === 'ResourceNotFoundException')
      throw new NotFoundError(`Requested resource not found: Table: ${table} not found`);
    throw err;
  }
  // Read-only (ttl describe, status): a control table that does not exist holds no completion row.
  const { Item } = await ddb
    .send(new GetItemCommand({ TableName: controlTable, Key: completionKey(table), ConsistentRead: true }))
    .catch((err: unknown) => {
      if ((err as { name?: string }).name === 'ResourceNotFoundException') return { Item: undefined };
      throw err;
    });
  const at = Item?.backfilledAt?.N;
  // A completion row written for an earlier table of the same name does not count.
  const created = description?.CreationDateTime?.getTime();
  const sameTable = Item?.tableCreatedAt?.N === undefined || Number(Item.tableCreatedAt.N) === created;
  const backfilledAt = at !== undefined && sameTable ? Number(at) : undefined;
  return {
    status: expiryIndexStatus(description, backfilledAt),
    ...(backfilledAt !== undefined ? { backfilledAt } : {}),
  };
}

/** Recorded by the backfill when every segment is done. */
export async function recordBackfilled(
  ddb: DynamoDBClient,
  controlTable: string,
  table: string,
  at: number,
): Promise<void> {
  const { Table } = await ddb.send(new DescribeTableCommand({ TableName: table }));
  const created = Table?.CreationDateTime?.getTime();
  await ensureInternalTable(ddb, controlTable);
  await ddb.send(
    new PutItemCommand({
      TableName: controlTable,
      Item: {
        ...completionKey(table),
        kind: { S: 'expiry-index' },
        backfilledAt: { N: String(at) },
        ...(created !== undefined ? { tableCreatedAt: { N: String(created) } } : {}),
      },
    }),
  );
}

/**
 * `index create`: UpdateTable with `GlobalSecondaryIndexUpdates: [{ Create }]`, the real DynamoDB API. An
 * existing index of that name is reported, not re-created. `provisioned` throughput is needed on a provisioned table.
 */
export async function createExpiryIndex(
  ddb: DynamoDBClient,
  table: string,
  settings: TableTtlSettings,
  provisioned?: { readCapacityUnits: number; writeCapacityUnits: number },
): Promise<void> {
  const { Table } = await ddb.send(new DescribeTableCommand({ TableName: table }));
  if ((Table?.GlobalSecondaryIndexes ?? []).some((g) => g.IndexName === EXPIRY_INDEX_NAME))
    throw new ConflictError(`table ${table} already has the index ${EXPIRY_INDEX_NAME}`);
  const def = expiryIndexDefinition(settings, relevantAttributes(settings));
  await ddb.send(
    new UpdateTableCommand({
      TableName: table,
      AttributeDefinitions: def.attributeDefinitions,
      GlobalSecondaryIndexUpdates: [
        {
          Create: {
            ...def.index,
            ...(provisioned
              ? {
                  ProvisionedThroughput: {
                    ReadCapacityUnits: provisioned.readCapacityUnits,
                    WriteCapacityUnits: provisioned.writeCapacityUnits,
                  },
                }
              : {}),
          },
        },
      ],
    }),
  );
}

/** `index drop`: UpdateTable `Delete`; the completion row goes too, so a later create backfills again. */
export async function dropExpiryIndex(
  ddb: DynamoDBClient,
  controlTable: string,
  table: string,
): Promise<void> {
  await ddb.send(
    new UpdateTableCommand({
      TableName: table,
      GlobalSecondaryIndexUpdates: [{ Delete: { IndexName: EXPIRY_INDEX_NAME } }],
    }),
  );
  await ensureInternalTable(ddb, controlTable);
  await ddb.send(
    new PutItemCommand({
      TableName: controlTable,
      Item: { ...completionKey(table), kind: { S: 'expiry-index' }, dropped: { BOOL: true } },
    }),
  );
}
