import { QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TtlstreamConfig } from '../../core/config';
import { INTERNAL_KEY, INTERNAL_SORT_KEY } from '../../core/tables';
import { ensureMarksTable, parseMarkRow, shardPk } from '../../pipeline/marks';
import { loadJournal, type IntentState } from '../../producer/journal';

/** A mark of an expired item, or an intent a producer's journal holds for one. */
export interface MarkRow {
  shard: number;
  kind: 'mark' | 'intent';
  keys: Record<string, AttributeValue>;
  /** The sort key of the mark row (of an intent: the mark it came from). */
  sk: string;
  state?: IntentState;
}

/**
 * The marks of `table` and the intents the producers' journals hold for it, read consistently shard by shard
 * (the marks table is created first if no pipeline has created it yet).
 */
export async function marksOf(
  env: { ddb: DynamoDBClient; config: TtlstreamConfig },
  table: string,
): Promise<MarkRow[]> {
  await ensureMarksTable(env.ddb, env.config.tables.marks);
  const rows: MarkRow[] = [];
  for (let shard = 0; shard < env.config.producer.shards; shard++) {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await env.ddb.send(
        new QueryCommand({
          TableName: env.config.tables.marks,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :t)',
          ExpressionAttributeNames: { '#pk': INTERNAL_KEY, '#sk': INTERNAL_SORT_KEY },
          ExpressionAttributeValues: { ':pk': { S: shardPk(shard) }, ':t': { S: `${table}#` } },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const r of page.Items ?? [])
        for (const m of parseMarkRow(r))
          rows.push({ shard, kind: 'mark', keys: m.address.keys, sk: m.address.sk });
      start = page.LastEvaluatedKey;
    } while (start);
    const journal = await loadJournal(env.ddb, env.config.tables.marks, shard);
    for (const intent of journal.intents.values()) {
      if (intent.address.table !== table) continue;
      rows.push({
        shard,
        kind: 'intent',
        keys: intent.address.keys,
        sk: intent.address.sk,
        state: intent.state,
      });
    }
  }
  return rows;
}
