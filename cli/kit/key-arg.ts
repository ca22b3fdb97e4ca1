import { readFileSync } from 'node:fs';
import { ValidationError } from '../../core/errors';

/**
 * Where a --key value comes from, as in the aws cli: `file://key.json` reads the file, `-` reads
 * stdin (keys with quotes are painful to type), anything else is the JSON itself.
 */
export function readKeySource(text: string, read: (source: string | number) => string = defaultRead): string {
  if (text !== '-' && !text.startsWith('file://')) return text;
  const source = text === '-' ? 0 : text.slice('file://'.length);
  try {
    return read(source).trim();
  } catch (err) {
    throw new ValidationError(
      `cannot read the key from ${text === '-' ? 'stdin' : source}: ${(err as Error).message}`,
    );
  }
}

function defaultRead(source: string | number): string {
  return readFileSync(source, 'utf8');
}

/** --key: inline JSON, file://path or - (stdin), parsed and checked as a DynamoDB-JSON key. */
export function parseKeyArg(text: string): Record<string, unknown> {
  return parseKeyJson(readKeySource(text));
}

/** A DynamoDB-JSON item key, e.g. {"pk":{"S":"a"}}; checked here so a typo is a usage error. */
export function parseKeyJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ValidationError(`not JSON: ${text}`);
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    Array.isArray(parsed) ||
    Object.keys(parsed).length === 0
  ) {
    throw new ValidationError(
      `expected an object of DynamoDB attribute values such as {"pk":{"S":"a"}}, got ${text}`,
    );
  }
  for (const [name, v] of Object.entries(parsed)) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.keys(v).length !== 1) {
      throw new ValidationError(`key attribute ${name} is not a DynamoDB attribute value such as {"S":"a"}`);
    }
  }
  return parsed as Record<string, unknown>;
}
