import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export type AttributeTypeName = 'S' | 'N' | 'B' | 'SS' | 'NS' | 'BS' | 'M' | 'L' | 'NULL' | 'BOOL';

const TYPE_NAMES: readonly AttributeTypeName[] = ['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL'];

/**
 * The DynamoDB type of an attribute value, or undefined when it is not exactly one known type
 * (an SDK `$unknown` member, or a hand-built object with two members set). Such values are treated as
 * "wrong type": never a reason to delete.
 */
export function attributeTypeOf(value: AttributeValue): AttributeTypeName | undefined {
  const record = value as unknown as Record<string, unknown>;
  let found: AttributeTypeName | undefined;
  for (const name of TYPE_NAMES) {
    if (record[name] === undefined) continue;
    if (found) return undefined;
    found = name;
  }
  return found;
}

/**
 * The raw member of an N value (normally its text; a hand-built value may hold anything), or
 * undefined when the value is not an N. parseDecimal decides whether it is a number.
 */
export function numberTextOf(value: AttributeValue): unknown {
  return attributeTypeOf(value) === 'N' ? (value as { N: unknown }).N : undefined;
}

export function stringOf(value: AttributeValue): string | undefined {
  if (attributeTypeOf(value) !== 'S') return undefined;
  const text = (value as { S: unknown }).S;
  return typeof text === 'string' ? text : undefined;
}

export function isBoolTrue(value: AttributeValue | undefined): boolean {
  return (
    value !== undefined && attributeTypeOf(value) === 'BOOL' && (value as { BOOL: unknown }).BOOL === true
  );
}
