import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { withRetry } from '../core/retry';
import { dynamoRetry } from '../pipeline/ddb-batch';

/** Key attribute names per table (DescribeTable once; a table's key schema cannot change). */
export class KeySchemas {
  private readonly cache = new Map<string, Promise<string[]>>();

  constructor(private readonly ddb: DynamoDBClient) {}

  get(table: string): Promise<string[]> {
    let p = this.cache.get(table);
    if (!p) {
      p = withRetry(() => this.ddb.send(new DescribeTableCommand({ TableName: table })), dynamoRetry).then(
        (out) => (out.Table?.KeySchema ?? []).map((k) => k.AttributeName as string),
      );
      // A failure (or a table that was deleted) must not stick.
      p.catch(() => this.cache.delete(table));
      this.cache.set(table, p);
    }
    return p;
  }

  /** Forget a table (it was deleted or re-created). */
  forget(table: string): void {
    this.cache.delete(table);
  }
}
