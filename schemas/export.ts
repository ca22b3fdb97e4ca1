import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { InternalError, ValidationError } from '../core/errors';
import { z } from 'zod';
import { BASE64, KeySchema, AttributeMapSchema, NUMBER_PATTERN } from './attribute-value';
import { loadSchemaVersions, type SchemaVersion } from './avro-registry';
import { RetractionSchema, StreamRecordSchema } from './record';
import { KINDS, type RecordKind } from './headers';
import { schemaRegistry } from './avro-registry';
import { STREAM_SCHEMA_OF, fullNameOf, subjectFor, type SubjectNameStrategy } from './subjects';

/**
 * What `ttlstream schemas export` writes, for consumers in other languages: every .avsc version as shipped, a JSON
 * Schema per message kind for the JSON encoding, and the fingerprints of every Avro version.
 */
export interface ExportFile {
  name: string;
  content: string;
}

export interface FingerprintRow {
  file: string;
  name: string;
  version: number;
  /** SHA-256 of the Parsing Canonical Form, lower-case hex: the `ttlstream-schema-fingerprint` header. */
  sha256: string;
  /** CRC-64-AVRO (Rabin) of the Parsing Canonical Form, as 16 hex digits of the unsigned value. */
  rabin: string;
  /** The same 64 bits as a signed decimal (Java's `SchemaNormalization.parsingFingerprint64`). */
  rabinSigned: string;
  /** MD5 of the Parsing Canonical Form, lower-case hex (avsc's default fingerprint). */
  md5: string;
}

const EMPTY64 = 0xc15d213aa4d7a795n;
const MASK64 = (1n << 64n) - 1n;
let rabinTable: bigint[] | undefined;

/** The Avro specification's 64-bit Rabin fingerprint (CRC-64-AVRO) of `bytes`, unsigned. */
export function rabinFingerprint64(bytes: Uint8Array): bigint {
  rabinTable ??= Array.from({ length: 256 }, (_, i) => {
    let fp = BigInt(i);
    for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (EMPTY64 & -(fp & 1n) & MASK64);
    return fp;
  });
  let fp = EMPTY64;
  for (const b of bytes) fp = (fp >> 8n) ^ (rabinTable[Number((fp ^ BigInt(b)) & 0xffn)] as bigint);
  return fp;
}

export function fingerprintRows(versions: SchemaVersion[] = loadSchemaVersions()): FingerprintRow[] {
  return versions.map((v) => {
    const rabin = rabinFingerprint64(Buffer.from(JSON.stringify(v.type.schema()), 'utf8'));
    return {
      file: basename(v.file),
      name: v.name,
      version: v.version,
      sha256: v.type.fingerprint('sha256').toString('hex'),
      rabin: rabin.toString(16).padStart(16, '0'),
      rabinSigned: BigInt.asIntN(64, rabin).toString(),
      md5: v.type.fingerprint('md5').toString('hex'),
    };
  });
}

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

function fingerprintMarkdown(rows: FingerprintRow[]): string {
  const lines = [
    '# ttlstream Avro schema fingerprints',
    '',
    "Fingerprints of each schema's Parsing Canonical Form (Avro specification). The `ttlstream-schema-fingerprint`",
    'header of an Avro message is the SHA-256 column. CRC-64-AVRO (Rabin) is given as unsigned hex and as a signed',
    'decimal (Java). Avro single-object encoding would put the Rabin fingerprint little-endian after `C3 01`;',
    'ttlstream does not use that framing (raw binary plus headers, or the Confluent wire format: subjects.md).',
    '',
    '| file | schema | version | SHA-256 | CRC-64-AVRO (hex) | CRC-64-AVRO (signed) | MD5 |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.file} | ${r.name} | ${r.version} | ${r.sha256} | ${r.rabin} | ${r.rabinSigned} | ${r.md5} |`,
    ),
  ];
  return lines.join('\n') + '\n';
}

/** The registry subjects of the stream schemas under each strategy (decision 0025), `<topic>` a placeholder. */
export function subjectRows(): Array<{
  strategy: SubjectNameStrategy;
  kind: RecordKind;
  schema: string;
  subject: string;
}> {
  return (['topic', 'record'] as const).flatMap((strategy) =>
    KINDS.map((kind) => ({
      strategy,
      kind,
      schema: fullNameOf(schemaRegistry().latest(STREAM_SCHEMA_OF[kind])),
      subject: subjectFor(strategy, '<topic>', kind),
    })),
  );
}

function subjectMarkdown(rows: ReturnType<typeof subjectRows>): string {
  return (
    [
      '# ttlstream schema registry subjects',
      '',
      'With `schemas.registry.url` set, Avro records on the stream topics are in the Confluent wire format (magic byte',
      '0, the 4-byte schema id, the Avro body) and their schemas are registered under these subjects',
      '(`schemas.registry.subjectNameStrategy`). `<topic>` is the stream topic: `ttlstream.remove` by default, or',
      '`ttlstream.remove.<table>` with per-table naming.',
      '',
      '| strategy | kind | schema | subject |',
      '| --- | --- | --- | --- |',
      ...rows.map((r) => `| ${r.strategy} | ${r.kind} | ${r.schema} | \`${r.subject}\` |`),
    ].join('\n') + '\n'
  );
}

/** Every file `schemas export` writes, in a stable order. */
export function schemaExportFiles(versions: SchemaVersion[] = loadSchemaVersions()): ExportFile[] {
  const rows = fingerprintRows(versions);
  const json = (v: unknown): string => JSON.stringify(v, null, 2) + '\n';
  return [
    // The files as shipped, byte for byte: their fingerprints are those of the table below.
    ...versions.map((v) => ({ name: basename(v.file), content: readFileSync(v.file, 'utf8') })),
    { name: 'stream-record.schema.json', content: json(jsonSchemaFor('remove')) },
    { name: 'retraction.schema.json', content: json(jsonSchemaFor('retract')) },
    { name: 'fingerprints.json', content: json(rows) },
    { name: 'fingerprints.md', content: fingerprintMarkdown(rows) },
    { name: 'subjects.json', content: json(subjectRows()) },
    { name: 'subjects.md', content: subjectMarkdown(subjectRows()) },
  ];
}

export interface WrittenExport {
  dir: string;
  files: { name: string; bytes: number }[];
}

/**
 * Writes schemaExportFiles() into `dir` (resolved against `cwd`), creating it if needed. Each file is written to a
 * temporary name and renamed, so a reader never sees half a schema. Refuses a path that exists and is not a directory.
 */
export function writeSchemaExport(dir: string, cwd: string = process.cwd()): WrittenExport {
  if (dir.trim() === '') throw new ValidationError('--dir must name a directory');
  const target = resolve(cwd, dir);
  if (existsSync(target) && !statSync(target).isDirectory())
    throw new ValidationError(`--dir ${dir}: exists and is not a directory`);
  mkdirSync(target, { recursive: true });
  const files = schemaExportFiles().map((f) => {
    const path = join(target, f.name);
    const tmp = `${path}.tmp-${process.pid}`;
    writeFileSync(tmp, f.content);
    renameSync(tmp, path);
    return { name: f.name, bytes: Buffer.byteLength(f.content) };
  });
  return { dir: target, files };
}
