import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { z } from 'zod';

export type { AttributeValue };

/** An item or key in DynamoDB JSON, SDK shape (binaries are Uint8Array). */
export type AttributeMap = Record<string, AttributeValue>;

/**
 * What the schemas accept as input: the SDK shape, or the Lambda/DynamoDB-JSON wire shape in
 * which B and BS hold base64 strings. Parsing always yields the SDK shape, so a record decoded
 * from JSON can be written back with the SDK without double-encoding binaries.
 */
export interface AttributeValueInput {
  S?: string;
  N?: string;
  B?: Uint8Array | string;
  SS?: string[];
  NS?: string[];
  BS?: (Uint8Array | string)[];
  M?: Record<string, AttributeValueInput>;
  L?: AttributeValueInput[];
  NULL?: boolean;
  BOOL?: boolean;
}

export const ATTRIBUTE_TYPES = ['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL'] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

/** DynamoDB's number syntax: optional sign, digits with an optional fraction, optional exponent. */
export const NUMBER_PATTERN = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** DynamoDB allows 32 levels of nesting; deeper input cannot come from a table and would risk the stack. */
export const MAX_NESTING = 64;

interface Issue {
  path: PropertyKey[];
  message: string;
}

/** Standard base64 (RFC 4648 section 4 alphabet, + and /), padded with = to a multiple of 4; no line breaks. */
export const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}

function parseBinary(v: unknown, path: PropertyKey[], issues: Issue[], tag: string): Uint8Array | undefined {
  if (v instanceof Uint8Array) return v;
  if (typeof v === 'string' && BASE64.test(v)) return new Uint8Array(Buffer.from(v, 'base64'));
  issues.push({ path, message: `${tag} must be a Uint8Array or a base64 string` });
  return undefined;
}

function parseSet<T>(
  v: unknown,
  path: PropertyKey[],
  issues: Issue[],
  tag: 'SS' | 'NS' | 'BS',
  element: (e: unknown, at: PropertyKey[]) => T | undefined,
): T[] | undefined {
  if (!Array.isArray(v)) {
    issues.push({ path, message: `${tag} must be an array` });
    return undefined;
  }
  if (v.length === 0) {
    issues.push({ path, message: `${tag} must not be empty` });
    return undefined;
  }
  const before = issues.length;
  const out = v.map((e, i) => element(e, [...path, i]));
  return issues.length === before ? (out as T[]) : undefined;
}

/**
 * The AttributeValue checker behind the zod schemas: validates and converts to the SDK shape in one
 * pass. Written by hand because zod's generic machinery on this recursive union cost ~10x more
 * per record than the encoding itself; the rules are the same as a strict zod union would state.
 */
function parseValue(
  input: unknown,
  path: PropertyKey[],
  issues: Issue[],
  depth: number,
): AttributeValue | undefined {
  if (!isPlainObject(input)) {
    issues.push({ path, message: 'an AttributeValue must be an object' });
    return undefined;
  }
  const keys = Object.keys(input).filter((k) => input[k] !== undefined);
  const tag = keys[0];
  if (keys.length !== 1 || tag === undefined || !(ATTRIBUTE_TYPES as readonly string[]).includes(tag)) {
    const got = keys.length === 0 ? 'none' : keys.join(', ');
    issues.push({
      path,
      message: `an AttributeValue has exactly one of ${ATTRIBUTE_TYPES.join(', ')}; got ${got}`,
    });
    return undefined;
  }
  return parseTagged(tag as AttributeType, input[tag], [...path, tag], issues, depth);
}

/** The value `v` of an AttributeValue's one tag, at `at`, as the SDK's shape; undefined with issues when wrong. */
function parseTagged(
  tag: AttributeType,
  v: unknown,
  at: PropertyKey[],
  issues: Issue[],
  depth: number,
): AttributeValue | undefined {
  switch (tag) {
    case 'S':
      if (typeof v === 'string') return { S: v };
      issues.push({ path: at, message: 'S must be a string' });
      return undefined;
    case 'N':
      if (typeof v === 'string' && NUMBER_PATTERN.test(v)) return { N: v };
      issues.push({ path: at, message: 'N must be a decimal number string' });
      return undefined;
    case 'B': {
      const b = parseBinary(v, at, issues, 'B');
      return b === undefined ? undefined : { B: b };
    }
    case 'SS': {
      const ss = parseSet(v, at, issues, 'SS', (e, p) => {
        if (typeof e === 'string') return e;
        issues.push({ path: p, message: 'SS elements must be strings' });
        return undefined;
      });
      return ss === undefined ? undefined : { SS: ss };
    }
    case 'NS': {
      const ns = parseSet(v, at, issues, 'NS', (e, p) => {
        if (typeof e === 'string' && NUMBER_PATTERN.test(e)) return e;
        issues.push({ path: p, message: 'NS elements must be decimal number strings' });
        return undefined;
      });
      return ns === undefined ? undefined : { NS: ns };
    }
    case 'BS': {
      const bs = parseSet(v, at, issues, 'BS', (e, p) => parseBinary(e, p, issues, 'BS elements'));
      return bs === undefined ? undefined : { BS: bs };
    }
    case 'M': {
      if (tooDeep(at, issues, depth)) return undefined;
      const m = parseMap(v, at, issues, depth + 1, true);
      return m === undefined ? undefined : { M: m };
    }
    case 'L':
      if (!Array.isArray(v)) {
        issues.push({ path: at, message: 'L must be an array' });
        return undefined;
      }
      return tooDeep(at, issues, depth) ? undefined : parseList(v, at, issues, depth + 1);
    case 'NULL':
      if (v === true) return { NULL: true };
      issues.push({ path: at, message: 'NULL must be true' });
      return undefined;
    case 'BOOL':
      if (typeof v === 'boolean') return { BOOL: v };
      issues.push({ path: at, message: 'BOOL must be a boolean' });
      return undefined;
  }
}

/** A map or list one level deeper would be past MAX_NESTING (an issue says so). */
function tooDeep(at: PropertyKey[], issues: Issue[], depth: number): boolean {
  if (depth < MAX_NESTING) return false;
  issues.push({ path: at, message: `nested deeper than ${MAX_NESTING} levels` });
  return true;
}

function parseList(
  v: unknown[],
  at: PropertyKey[],
  issues: Issue[],
  depth: number,
): AttributeValue | undefined {
  const before = issues.length;
  const out = v.map((e, i) => parseValue(e, [...at, i], issues, depth));
  return issues.length === before ? { L: out as AttributeValue[] } : undefined;
}

/**
 * A string-keyed map whose output keeps every key. `out[key] = v` (as z.record does) would
 * silently drop an attribute named "__proto__" (legal in DynamoDB); Object.fromEntries defines it
 * as an own property instead.
 */
function parseMap(
  input: unknown,
  path: PropertyKey[],
  issues: Issue[],
  depth: number,
  allowEmptyNames: boolean,
): AttributeMap | undefined {
  if (!isPlainObject(input)) {
    issues.push({ path, message: 'expected a map of attribute values' });
    return undefined;
  }
  const before = issues.length;
  const out: [string, AttributeValue | undefined][] = [];
  for (const key of Object.keys(input)) {
    if (key.length === 0 && !allowEmptyNames) {
      issues.push({ path: [...path, key], message: 'attribute names must not be empty' });
      continue;
    }
    out.push([key, parseValue(input[key], [...path, key], issues, depth)]);
  }
  return issues.length === before ? (Object.fromEntries(out) as AttributeMap) : undefined;
}

function toZodIssues<T>(
  ctx: { issues: unknown[] },
  input: unknown,
  run: (issues: Issue[]) => T | undefined,
): T | typeof z.NEVER {
  const issues: Issue[] = [];
  const out = run(issues);
  if (issues.length === 0 && out !== undefined) return out;
  for (const issue of issues)
    ctx.issues.push({ code: 'custom', message: issue.message, path: issue.path, input });
  return z.NEVER;
}

/**
 * One DynamoDB AttributeValue: exactly one of S, N, B, SS, NS, BS, M, L, NULL, BOOL. Sets must be
 * non-empty (DynamoDB never returns an empty set); NULL must be true. B/BS accept Uint8Array or
 * base64 strings and always yield Uint8Array.
 */
export const AttributeValueSchema: z.ZodType<AttributeValue, AttributeValueInput> = z
  .custom<AttributeValueInput>(() => true)
  .transform((input, ctx) => toZodIssues(ctx, input, (issues) => parseValue(input, [], issues, 0)));

/**
 * A whole item (OldImage) or nested map: attribute name → AttributeValue, order preserved. Names
 * are not checked beyond being strings: the item came from the table, and refusing a name the
 * table accepted would leave a deletion without its record.
 */
export const AttributeMapSchema: z.ZodType<AttributeMap, Record<string, AttributeValueInput>> = z
  .custom<Record<string, AttributeValueInput>>(() => true)
  .transform((input, ctx) => toZodIssues(ctx, input, (issues) => parseMap(input, [], issues, 0, true)));

/** A primary key: one or two attributes of type S, N or B. */
export const KeySchema: z.ZodType<AttributeMap, Record<string, AttributeValueInput>> = z
  .custom<Record<string, AttributeValueInput>>(() => true)
  .transform((input, ctx) =>
    toZodIssues(ctx, input, (issues) => {
      const keys = parseMap(input, [], issues, 0, false);
      if (keys === undefined) return undefined;
      const names = Object.keys(keys);
      if (names.length < 1 || names.length > 2)
        issues.push({ path: [], message: 'a key has one or two attributes' });
      for (const name of names) {
        const t = typeOf(keys[name]);
        if (t !== 'S' && t !== 'N' && t !== 'B') {
          issues.push({ path: [name], message: `key attribute ${name} must be S, N or B, not ${t}` });
        }
      }
      return keys;
    }),
  );

/** The type tag of a (valid) AttributeValue. */
export function typeOf(value: AttributeValue | undefined): AttributeType | undefined {
  if (value === undefined) return undefined;
  return ATTRIBUTE_TYPES.find((t) => (value as unknown as Record<string, unknown>)[t] !== undefined);
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

/** Structural equality of two SDK-shape AttributeValues (set and map order matter as stored). */
export function attributeValuesEqual(a: AttributeValue, b: AttributeValue): boolean {
  const t = typeOf(a);
  if (t !== typeOf(b)) return false;
  const x = a as unknown as Record<string, unknown>;
  const y = b as unknown as Record<string, unknown>;
  switch (t) {
    case 'B':
      return bytesEqual(x.B as Uint8Array, y.B as Uint8Array);
    case 'BS': {
      const p = x.BS as Uint8Array[];
      const q = y.BS as Uint8Array[];
      return p.length === q.length && p.every((v, i) => bytesEqual(v, q[i] as Uint8Array));
    }
    case 'SS':
    case 'NS': {
      const p = x[t] as string[];
      const q = y[t] as string[];
      return p.length === q.length && p.every((v, i) => v === q[i]);
    }
    case 'L': {
      const p = x.L as AttributeValue[];
      const q = y.L as AttributeValue[];
      return p.length === q.length && p.every((v, i) => attributeValuesEqual(v, q[i] as AttributeValue));
    }
    case 'M':
      return attributeMapsEqual(x.M as AttributeMap, y.M as AttributeMap);
    default:
      return x[t as string] === y[t as string];
  }
}

export function attributeMapsEqual(a: AttributeMap, b: AttributeMap): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every(
    (k) => Object.hasOwn(b, k) && attributeValuesEqual(a[k] as AttributeValue, b[k] as AttributeValue),
  );
}
