import {
  ConditionalCheckFailedException,
  ResourceNotFoundException,
  GetItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { ConflictError } from '../../core/errors';
import { withRetry } from '../../core/retry';
import { INTERNAL_KEY, noControlTable } from '../../core/tables';
import { batchGetAll, dynamoRetry } from '../ddb-batch';
import type { GuardState } from './decision';

/** A table's guard row in the control table, `pk = guard#<table>`. No row means ARMED. */
export interface GuardRecord {
  table: string;
  state: GuardState;
  /** Why the table was paused (kept after a confirm, for the audit trail). */
  reason?: string;
  pausedAt?: number;
  /** True after an operator's cancel: pending marks were discarded and the scanner does not mark until confirm. */
  cancelled: boolean;
  confirmedAt?: number;
  confirmedBy?: string;
  cancelledAt?: number;
  cancelledBy?: string;
  /** Deletions counted per clock minute by every producer: the current bucket and the one before. */
  deletes?: { minute: number; count: number; prevMinute?: number; prevCount?: number };
}

export function guardKey(table: string): Record<string, AttributeValue> {
  return { [INTERNAL_KEY]: { S: `guard#${table}` } };
}

function parse(table: string, row: Record<string, AttributeValue> | undefined): GuardRecord {
  const s = row?.state?.S;
  const state: GuardState = s === 'PAUSED' || s === 'CONFIRMED' ? s : 'ARMED';
  const num = (a: string): number | undefined => (row?.[a]?.N !== undefined ? Number(row[a]?.N) : undefined);
  const str = (a: string): string | undefined => row?.[a]?.S;
  const out: GuardRecord = { table, state, cancelled: row?.cancelled?.BOOL === true };
  const fields: Array<[keyof GuardRecord, unknown]> = [
    ['reason', str('reason')],
    ['pausedAt', num('pausedAt')],
    ['confirmedAt', num('confirmedAt')],
    ['confirmedBy', str('confirmedBy')],
    ['cancelledAt', num('cancelledAt')],
    ['cancelledBy', str('cancelledBy')],
  ];
  for (const [k, v] of fields) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  const minute = num('rateMinute');
  if (minute !== undefined) {
    const prevMinute = num('prevMinute');
    const prevCount = num('prevCount');
    out.deletes = {
      minute,
      count: num('rateCount') ?? 0,
      ...(prevMinute !== undefined ? { prevMinute } : {}),
      ...(prevCount !== undefined ? { prevCount } : {}),
    };
  }
  return out;
}

export class GuardStore {
  constructor(
    private readonly ddb: DynamoDBClient,
    private readonly controlTable: string,
    private readonly now: () => number = Date.now,
  ) {}

  async get(table: string): Promise<GuardRecord> {
    const out = await withRetry(
      () =>
        this.ddb.send(
          new GetItemCommand({ TableName: this.controlTable, Key: guardKey(table), ConsistentRead: true }),
        ),
      dynamoRetry,
    ).catch(noControlTable);
    return parse(table, out?.Item);
  }

  /** One BatchGetItem for the guard rows of several tables (the producer reads them fresh for every batch). */
  async getMany(tables: readonly string[]): Promise<Map<string, GuardRecord>> {
    const result = new Map<string, GuardRecord>();
    const unique = [...new Set(tables)];
    for (const row of await batchGetAll(this.ddb, this.controlTable, unique.map(guardKey))) {
      const table = (row[INTERNAL_KEY]?.S ?? '').slice('guard#'.length);
      result.set(table, parse(table, row));
    }
    for (const t of unique) if (!result.has(t)) result.set(t, parse(t, undefined));
    return result;
  }

  /** UpdateItem returning ALL_NEW, or undefined when the condition failed. */
  private async update(
    table: string,
    expression: string,
    values: Record<string, AttributeValue>,
    condition?: string,
  ): Promise<Record<string, AttributeValue> | undefined> {
    // DynamoDB rejects unused names, so pass #state only where it is used.
    const usesState = expression.includes('#state') || (condition ?? '').includes('#state');
    try {
      const out = await withRetry(
        () =>
          this.ddb.send(
            new UpdateItemCommand({
              TableName: this.controlTable,
              Key: guardKey(table),
              UpdateExpression: expression,
              ...(usesState ? { ExpressionAttributeNames: { '#state': 'state' } } : {}),
              ExpressionAttributeValues: values,
              ...(condition ? { ConditionExpression: condition } : {}),
              ReturnValues: 'ALL_NEW',
            }),
          ),
        dynamoRetry,
      );
      return out.Attributes ?? {};
    } catch (err) {
      // No control table: no guard row, so nothing is paused (confirm/cancel are conditional on PAUSED).
      if (err instanceof ConditionalCheckFailedException || err instanceof ResourceNotFoundException)
        return undefined;
      throw err;
    }
  }

  /**
   * ARMED → PAUSED. Only from ARMED (or no row): an operator's confirm that raced with this decision wins.
   * Returns the new record, or undefined when the guard was not ARMED any more.
   */
  async pause(table: string, reason: string): Promise<GuardRecord | undefined> {
    const row = await this.update(
      table,
      'SET #state = :paused, reason = :reason, pausedAt = :now, cancelled = :false',
      {
        ':paused': { S: 'PAUSED' },
        ':armed': { S: 'ARMED' },
        ':reason': { S: reason },
        ':now': { N: String(this.now()) },
        ':false': { BOOL: false },
      },
      'attribute_not_exists(#state) OR #state = :armed',
    );
    return row ? parse(table, row) : undefined;
  }

  /**
   * Operator: resume deletions on a PAUSED table; the guard stays quiet until a normal-looking pass
   * re-arms it. ConflictError on any other state: confirming an armed table would silence the guard.
   */
  async confirm(table: string, by: string): Promise<GuardRecord> {
    const r = await this.update(
      table,
      'SET #state = :confirmed, confirmedAt = :now, confirmedBy = :by, cancelled = :false',
      {
        ':confirmed': { S: 'CONFIRMED' },
        ':paused': { S: 'PAUSED' },
        ':now': { N: String(this.now()) },
        ':by': { S: by },
        ':false': { BOOL: false },
      },
      '#state = :paused',
    );
    if (!r) throw await this.notPaused(table, 'confirm');
    return parse(table, r);
  }

  /**
   * Operator: keep a PAUSED table paused and stop marking it until a confirm. ConflictError on any
   * other state: cancel used to pause a healthy table.
   */
  async cancel(table: string, by: string): Promise<GuardRecord> {
    const r = await this.update(
      table,
      // The pause's reason stays: it is why the operator cancelled.
      'SET cancelled = :true, cancelledAt = :now, cancelledBy = :by',
      {
        ':paused': { S: 'PAUSED' },
        ':true': { BOOL: true },
        ':now': { N: String(this.now()) },
        ':by': { S: by },
      },
      '#state = :paused',
    );
    if (!r) throw await this.notPaused(table, 'cancel');
    return parse(table, r);
  }

  private async notPaused(table: string, what: 'confirm' | 'cancel'): Promise<ConflictError> {
    const { state } = await this.get(table);
    return new ConflictError(
      `guard ${what}: ${table} is not paused (its guard is ${state}); only a table the guard paused can be ${what}ed`,
    );
  }

  /** CONFIRMED → ARMED once the episode is over. */
  async rearm(table: string): Promise<GuardRecord | undefined> {
    const row = await this.update(
      table,
      'SET #state = :armed',
      { ':armed': { S: 'ARMED' }, ':confirmed': { S: 'CONFIRMED' } },
      '#state = :confirmed',
    );
    return row ? parse(table, row) : undefined;
  }

  /**
   * Count `n` deletions in the current clock minute, shared by every producer through the guard row, and return
   * the minute's total including them. Two conditional updates at most in the common case: add to this minute's
   * counter, or start a new minute.
   */
  async countDeletes(table: string, n: number): Promise<number> {
    const minute = Math.floor(this.now() / 60_000);
    for (let attempt = 0; attempt < 5; attempt++) {
      const added = await this.update(
        table,
        'ADD rateCount :n',
        { ':n': { N: String(n) }, ':m': { N: String(minute) } },
        'rateMinute = :m',
      );
      if (added) return Number(added.rateCount?.N ?? String(n));
      // A new minute: the old bucket becomes the previous one (the guard's re-arm looks at both).
      const started = await this.update(
        table,
        'SET prevMinute = if_not_exists(rateMinute, :zero), prevCount = if_not_exists(rateCount, :zero), rateMinute = :m, rateCount = :n',
        { ':n': { N: String(n) }, ':m': { N: String(minute) }, ':zero': { N: '0' } },
        'attribute_not_exists(rateMinute) OR rateMinute < :m',
      );
      if (started) return n;
    }
    // Clocks of peers disagree about the minute; do not block deletions on the counter itself.
    return n;
  }
}
