import { InternalError } from '../core/errors';
import { z } from 'zod';
import { BASE64, KeySchema, AttributeMapSchema, NUMBER_PATTERN } from './attribute-value';
import { RetractionSchema, StreamRecordSchema } from './record';

/**
 * JSON Schemas (draft 2020-12) of the JSON encoding's message kinds, derived from the zod schemas: what
 * `ttlstream schemas export` writes and the AsyncAPI document (asyncapi.ts) describes the JSON messages with.
 */

const JSON_SCHEMA_DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/**
 * AttributeValue, written by hand: its zod schema is a custom parser (schemas/attribute-value.ts, parseValue) that
 * z.toJSONSchema cannot see into. The same rules: exactly one type tag, N a decimal string, B/BS standard padded
 * base64, sets non-empty, NULL only true. Not expressible here: the nesting limit (64 levels).
 */
function attributeDefs(): Record<string, unknown> {
  const number = { type: 'string', pattern: NUMBER_PATTERN.source };
  const binary = { type: 'string', contentEncoding: 'base64', pattern: BASE64.source };
  return {
    AttributeValue: {
      description: 'A DynamoDB AttributeValue in DynamoDB JSON: exactly one type tag.',
      type: 'object',
      minProperties: 1,
      maxProperties: 1,
      additionalProperties: false,
      properties: {
        S: { type: 'string' },
        N: number,
        B: binary,
        SS: { type: 'array', minItems: 1, items: { type: 'string' } },
        NS: { type: 'array', minItems: 1, items: number },
        BS: { type: 'array', minItems: 1, items: binary },
        M: { $ref: '#/$defs/AttributeMap' },
        L: { type: 'array', items: { $ref: '#/$defs/AttributeValue' } },
        NULL: { const: true },
        BOOL: { type: 'boolean' },
      },
    },
    AttributeMap: {
      description: 'Attribute name (any string, "__proto__" included) to AttributeValue; order as stored.',
      type: 'object',
      additionalProperties: { $ref: '#/$defs/AttributeValue' },
    },
    Key: {
      description: 'A primary key: one or two non-empty attribute names, each of type S, N or B.',
      type: 'object',
      minProperties: 1,
      maxProperties: 2,
      propertyNames: { minLength: 1 },
      additionalProperties: {
        type: 'object',
        minProperties: 1,
        maxProperties: 1,
        additionalProperties: false,
        properties: { S: { type: 'string' }, N: number, B: binary },
      },
    },
  };
}

/** The input side of a `z.custom().transform()` pipe, which is what z.toJSONSchema visits for it. */
function pipeInput(schema: unknown): unknown {
  return (schema as { _zod: { def: { in?: unknown } } })._zod.def.in;
}

/** JSON Schema (draft 2020-12) of one message kind's JSON encoding, derived from its zod schema. */
export function jsonSchemaFor(kind: 'remove' | 'retract'): Record<string, unknown> {
  const refs = new Map<unknown, string>([
    [pipeInput(KeySchema), '#/$defs/Key'],
    [pipeInput(AttributeMapSchema), '#/$defs/AttributeMap'],
  ]);
  const unknown: string[] = [];
  const base = z.toJSONSchema(kind === 'remove' ? StreamRecordSchema : RetractionSchema, {
    target: 'draft-2020-12',
    // Input side: what is on the wire (B as base64), not the SDK shape decoding yields.
    io: 'input',
    // 'any' lets the known custom parsers through to `override`; any other one is refused below, never left open.
    unrepresentable: 'any',
    override: (ctx) => {
      const ref = refs.get(ctx.zodSchema);
      if (ref === undefined && ctx.zodSchema._zod.def.type === 'custom') unknown.push(ctx.path.join('/'));
      if (ref !== undefined) {
        for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[k];
        ctx.jsonSchema.$ref = ref;
      }
    },
  }) as Record<string, unknown>;
  if (unknown.length > 0)
    throw new InternalError(`no JSON Schema for the custom zod schema at ${unknown.join(', ')}`);
  const { $schema: _drop, ...rest } = base;
  return {
    $schema: JSON_SCHEMA_DRAFT,
    title:
      kind === 'remove'
        ? 'ttlstream REMOVE record (JSON encoding)'
        : 'ttlstream RETRACT message (JSON encoding)',
    description:
      kind === 'remove'
        ? 'Value of a message with ttlstream-kind: remove, ttlstream-encoding: json. Unknown fields may be added later: ignore them. Not expressed here: Keys equal the same attributes of OldImage; the region in eventSourceARN equals awsRegion. See docs/stream-contract.md.'
        : 'Value of a message with ttlstream-kind: retract, ttlstream-encoding: json. Unknown fields may be added later: ignore them. See docs/stream-contract.md.',
    ...rest,
    $defs: attributeDefs(),
  };
}
