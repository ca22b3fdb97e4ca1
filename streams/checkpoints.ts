import {
  DeleteItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { INTERNAL_KEY } from '../core/tables';
import { shardKey, type Checkpoint } from './lineage';

/**
 * What the streams role keeps in the control table, beside the settings and the leases:
 * - `stream-shard#<table>#<label>#<shardId>`: a shard's checkpoint (the last record published from it, whether it was
 *   read to its end), written by the reader that holds the shard's lease after each publish;
 * - `stream-follow#<table>`: since when the table is followed, and every stream ARN of it seen, so a stream turned off
 *   (or of a dropped table) is still read to its end once DynamoDB no longer names it.
 */

export interface FollowRow {
  table: string;
  startedAt: number;
  arns: string[];
}

/** A table's follow row and checkpoints, as one discovery round reads them. */
export interface TableCheckpoints {
  follow?: FollowRow;
  /** By shardKey(label, shardId). */
  checkpoints: Map<string, Checkpoint>;
}

const SHARD_PREFIX = 'stream-shard#';
const FOLLOW_PREFIX = 'stream-follow#';

export function streamCheckpointKey(table: string, label: string, shardId: string): string {
  return `${SHARD_PREFIX}${table}#${label}#${shardId}`;
}

export class CheckpointStore {
  constructor(
    private readonly ddb: DynamoDBClient,
    private readonly controlTable: string,
  ) {}

  /** Every table's follow row and checkpoints: one Scan of the control table's `stream-` rows. */
  async readAll(): Promise<Map<string, TableCheckpoints>> {
    const out = new Map<string, TableCheckpoints>();
    const of = (table: string): TableCheckpoints => {
      let t = out.get(table);
      if (!t) out.set(table, (t = { checkpoints: new Map() }));
      return t;
    };
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.ddb.send(
        new ScanCommand({
          TableName: this.controlTable,
          ConsistentRead: true,
          FilterExpression: 'begins_with(#pk, :shard) OR begins_with(#pk, :follow)',
          ExpressionAttributeNames: { '#pk': INTERNAL_KEY },
          ExpressionAttributeValues: { ':shard': { S: SHARD_PREFIX }, ':follow': { S: FOLLOW_PREFIX } },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const table = item.table?.S;
        if (table === undefined) continue;
        if ((item[INTERNAL_KEY]?.S ?? '').startsWith(FOLLOW_PREFIX))
          of(table).follow = {
            table,
            startedAt: Number(item.startedAt?.N ?? '0'),
            arns: [...(item.arns?.SS ?? [])].sort(),
          };
        else of(table).checkpoints.set(shardKey(item.label?.S ?? '', item.shardId?.S ?? ''), decode(item));
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  async save(table: string, label: string, shardId: string, cp: Checkpoint): Promise<void> {
    await this.ddb.send(
      new PutItemCommand({
        TableName: this.controlTable,
        Item: {
          [INTERNAL_KEY]: { S: streamCheckpointKey(table, label, shardId) },
          kind: { S: 'stream-checkpoint' },
          table: { S: table },
          label: { S: label },
          shardId: { S: shardId },
          ended: { BOOL: cp.ended },
          ...(cp.sequenceNumber !== undefined ? { sequenceNumber: { S: cp.sequenceNumber } } : {}),
          ...(cp.latest ? { latest: { BOOL: true } } : {}),
          updatedAt: { N: String(Date.now()) },
        },
      }),
    );
  }

  /** A checkpoint no longer needed: its shard is read to its end and gone from the stream. */
  async forget(table: string, label: string, shardId: string): Promise<void> {
    await this.ddb.send(
      new DeleteItemCommand({
        TableName: this.controlTable,
        Key: { [INTERNAL_KEY]: { S: streamCheckpointKey(table, label, shardId) } },
      }),
    );
  }

  /** Starts following (once: a concurrent first start keeps the earlier time) and remembers the stream ARNs. */
  async remember(table: string, arns: readonly string[], now: number): Promise<void> {
    await this.ddb.send(
      new UpdateItemCommand({
        TableName: this.controlTable,
        Key: { [INTERNAL_KEY]: { S: `${FOLLOW_PREFIX}${table}` } },
        UpdateExpression:
          arns.length > 0
            ? 'SET #table = :table, startedAt = if_not_exists(startedAt, :now) ADD arns :arns'
            : 'SET #table = :table, startedAt = if_not_exists(startedAt, :now)',
        ExpressionAttributeNames: { '#table': 'table' },
        ExpressionAttributeValues: {
          ':table': { S: table },
          ':now': { N: String(now) },
          ...(arns.length > 0 ? { ':arns': { SS: [...arns] } } : {}),
        },
      }),
    );
  }

  /** Stream ARNs that are gone (DescribeStream no longer knows them) and whose every shard was read or reported. */
  async dropArns(table: string, arns: readonly string[]): Promise<void> {
    if (arns.length === 0) return;
    await this.ddb.send(
      new UpdateItemCommand({
        TableName: this.controlTable,
        Key: { [INTERNAL_KEY]: { S: `${FOLLOW_PREFIX}${table}` } },
        UpdateExpression: 'DELETE arns :arns',
        ExpressionAttributeValues: { ':arns': { SS: [...arns] } },
      }),
    );
  }
}

function decode(item: Record<string, AttributeValue>): Checkpoint {
  const seq = item.sequenceNumber?.S;
  return {
    ended: item.ended?.BOOL === true,
    ...(seq !== undefined ? { sequenceNumber: seq } : {}),
    ...(item.latest?.BOOL === true ? { latest: true } : {}),
  };
}
