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

const numberString = z.string().regex(NUMBER_PATTERN, 'N must be a decimal number string');

const binary = z
  .union([z.instanceof(Uint8Array), z.base64('B must be a Uint8Array or a base64 string')])
  .transform((b): Uint8Array => (typeof b === 'string' ? new Uint8Array(Buffer.from(b, 'base64')) : b));

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}

/**
 * A string-keyed map whose output keeps every key. zod's z.record assigns keys with `out[key] = v`,
 * which silently drops an attribute named "__proto__" (legal in DynamoDB); Object.fromEntries
 * defines it as an own property instead.
 */
function attributeMap(
  minKeys = 0,
  allowEmptyNames = true,
): z.ZodType<AttributeMap, Record<string, AttributeValueInput>> {
  return z
    .custom<Record<string, AttributeValueInput>>(isPlainObject, 'expected a map of attribute values')
    .transform((input, ctx) => {
      const keys = Object.keys(input);
      if (keys.length < minKeys) {
        ctx.issues.push({ code: 'custom', message: `expected at least ${minKeys} attribute(s)`, input });
        return z.NEVER;
      }
      const out: [string, AttributeValue][] = [];
      let ok = true;
      for (const key of keys) {
        if (key.length === 0 && !allowEmptyNames) {
          ctx.issues.push({
            code: 'custom',
            message: 'attribute names must not be empty',
            input,
            path: [key],
          });
          ok = false;
          continue;
        }
        const r = AttributeValueSchema.safeParse(input[key]);
        if (r.success) out.push([key, r.data]);
        else {
          ok = false;
          for (const issue of r.error.issues) {
            ctx.issues.push({
              code: 'custom',
              message: issue.message,
              input: input[key],
              path: [key, ...issue.path],
            });
          }
        }
      }
      return ok ? (Object.fromEntries(out) as AttributeMap) : z.NEVER;
    });
}

/**
 * One DynamoDB AttributeValue: exactly one of S, N, B, SS, NS, BS, M, L, NULL, BOOL. Sets must be
 * non-empty (DynamoDB never returns an empty set); NULL must be true.
 */
export const AttributeValueSchema: z.ZodType<AttributeValue, AttributeValueInput> = z.lazy(() =>
  z
    .strictObject({
      S: z.string().optional(),
      N: numberString.optional(),
      B: binary.optional(),
      SS: z.array(z.string()).min(1, 'SS must not be empty').optional(),
      NS: z.array(numberString).min(1, 'NS must not be empty').optional(),
      BS: z.array(binary).min(1, 'BS must not be empty').optional(),
      M: attributeMap().optional(),
      L: z.array(AttributeValueSchema).optional(),
      NULL: z.literal(true, 'NULL must be true').optional(),
      BOOL: z.boolean().optional(),
    })
    .transform((v, ctx) => {
      const present = ATTRIBUTE_TYPES.filter((t) => v[t] !== undefined);
      const only = present[0];
      if (present.length !== 1 || only === undefined) {
        ctx.issues.push({
          code: 'custom',
          message: `an AttributeValue has exactly one of ${ATTRIBUTE_TYPES.join(', ')}; got ${present.length === 0 ? 'none' : present.join(', ')}`,
          input: v,
        });
        return z.NEVER;
      }
      return { [only]: v[only] } as unknown as AttributeValue;
    }),
);

/**
 * A whole item (OldImage) or nested map: attribute name → AttributeValue, order preserved. Names
 * are not checked beyond being strings: the item came from the table, and refusing a name the
 * table accepted would leave a deletion without its record.
 */
export const AttributeMapSchema: z.ZodType<
  AttributeMap,
  Record<string, AttributeValueInput>
> = attributeMap();

/** A primary key: one or two attributes of type S, N or B. */
export const KeySchema: z.ZodType<AttributeMap, Record<string, AttributeValueInput>> = attributeMap(
  1,
  false,
).superRefine((keys, ctx) => {
  const names = Object.keys(keys);
  if (names.length > 2) ctx.addIssue({ code: 'custom', message: 'a key has one or two attributes' });
  for (const name of names) {
    const t = typeOf(keys[name]);
    if (t !== 'S' && t !== 'N' && t !== 'B') {
      ctx.addIssue({
        code: 'custom',
        message: `key attribute ${name} must be S, N or B, not ${t}`,
        path: [name],
      });
    }
  }
});

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
