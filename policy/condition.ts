import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../core/errors';
import { attributeTypeOf } from './attribute-value';
import { evaluate, isExpired } from './evaluate';
import type { TableTtlSettings } from './settings';
import type { ConditionParts, Evaluation, Item } from './types';

/**
 * The condition for the deleter's DeleteItem: true at the server only if every input of the
 * "expired" verdict is still what it was when the item was evaluated. Those inputs were expired at
 * `nowMs`, and time only moves forward, so unchanged inputs mean the item is still expired; any writer
 * who extends or removes the TTL, sets the legal hold or (cosmos) rewrites the item in time makes the
 * condition false and the item survives.
 *
 * Only equality on scalar values and attribute_exists/attribute_not_exists are used: they behave the
 * same on DynamoDB and dynalite (which cannot compare M or L values).
 *
 * Not covered (the caller re-reads them): changes to the table's settings, and the 5-year line of
 * dynamodb mode being crossed between evaluation and delete.
 */
export function stillExpiredCondition(settings: TableTtlSettings, item: Item, nowMs: number): ConditionParts {
  const verdict = evaluate(settings, item, nowMs);
  if (!isExpired(verdict)) {
    throw new ValidationError(
      `refusing to build a delete condition for an item that is not expired at ${isoOrRaw(nowMs)} ` +
        `under the ${settings.policy.mode} policy (verdict: ${describe(verdict)})`,
    );
  }
  const parts = new ConditionBuilder();
  const policy = settings.policy;
  switch (policy.mode) {
    case 'dynamodb':
      parts.pinPresent('#ttl', ':ttl', policy.attributeName, item);
      break;
    case 'cosmos':
      // The age comes from the last write: an unchanged stamp means the item was not rewritten.
      parts.pinPresent('#lw', ':lw', policy.lastWriteAttribute, item);
      // The item ttl is pinned as seen, including its absence (then the default applied).
      if (item[policy.ttlAttribute] === undefined)
        parts.add('attribute_not_exists(#ttl)', { '#ttl': policy.ttlAttribute });
      else parts.pinPresent('#ttl', ':ttl', policy.ttlAttribute, item);
      break;
    case 'mongo':
      parts.pinPresent('#tf', ':tf', policy.timeField, item);
      break;
  }
  if (settings.legalHoldAttribute !== undefined) {
    parts.add(
      '(attribute_not_exists(#hold) OR #hold <> :holdTrue)',
      { '#hold': settings.legalHoldAttribute },
      { ':holdTrue': { BOOL: true } },
    );
  }
  return parts.build();
}

class ConditionBuilder {
  private readonly clauses: string[] = [];
  private readonly names: Record<string, string> = {};
  private readonly values: Record<string, AttributeValue> = {};

  add(clause: string, names: Record<string, string>, values: Record<string, AttributeValue> = {}): void {
    this.clauses.push(clause);
    Object.assign(this.names, names);
    Object.assign(this.values, values);
  }

  /** attribute_exists(attr) AND attr = <the value the verdict was based on>. */
  pinPresent(name: string, placeholder: string, attribute: string, item: Item): void {
    const value = item[attribute];
    // An expired verdict implies these attributes held scalar values; anything else is a bug upstream.
    if (value === undefined)
      throw new ValidationError(`attribute ${attribute} is missing from the evaluated item`);
    this.add(
      `attribute_exists(${name}) AND ${name} = ${placeholder}`,
      { [name]: attribute },
      { [placeholder]: scalarCopy(value) },
    );
  }

  build(): ConditionParts {
    return { expression: this.clauses.join(' AND '), names: { ...this.names }, values: { ...this.values } };
  }
}

function scalarCopy(value: AttributeValue): AttributeValue {
  const type = attributeTypeOf(value);
  if (type === 'N') return { N: (value as { N: string }).N };
  if (type === 'S') return { S: (value as { S: string }).S };
  throw new ValidationError(`cannot pin a ${type ?? 'malformed'} value in a delete condition`);
}

function describe(e: Evaluation): string {
  switch (e.kind) {
    case 'not-subject':
    case 'ignored':
      return `${e.kind}/${e.reason}`;
    case 'expires':
      return `expires at ${isoOrRaw(e.expiresAtMs)}${e.looksLikeMillis ? ' (value looks like milliseconds)' : ''}`;
    case 'held':
      return 'held by the legal hold';
    case 'never':
      return 'never expires';
  }
}

function isoOrRaw(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}
