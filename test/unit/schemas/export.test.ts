import fc from 'fast-check';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import avsc from 'avsc';
import { SCHEMA_FINGERPRINTS, encodeRemove, encodeRetraction } from '../../../schemas';
import { loadSchemaVersions } from '../../../schemas/avro-registry';
import {
  fingerprintRows,
  rabinFingerprint64,
  schemaExportFiles,
  writeSchemaExport,
} from '../../../schemas/export';
import { jsonSchemaFor } from '../../../schemas/json-schema';
import { recordArb, sampleRecord, sampleRetraction } from '../../support/stream-samples';

/**
 * A validator for exactly the JSON Schema keywords the exported schemas use, so the test checks real messages
 * against them without a validator dependency. Fails on any keyword it does not know.
 */
type Schema = Record<string, unknown>;
const KNOWN = new Set([
  ...['$schema', '$defs', 'title', 'description', 'contentEncoding', 'type', 'const', 'enum', 'pattern'],
  ...['minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'required', 'properties'],
  ...['additionalProperties', 'minProperties', 'maxProperties', 'items', 'minItems', '$ref', 'propertyNames'],
]);
function valid(root: Schema, schema: Schema, v: unknown): boolean {
  for (const k of Object.keys(schema)) if (!KNOWN.has(k)) throw new Error(`validator does not know ${k}`);
  if (typeof schema.$ref === 'string') {
    const def = (root.$defs as Record<string, Schema>)[schema.$ref.replace('#/$defs/', '')];
    if (!def) throw new Error(`dangling ${schema.$ref}`);
    return valid(root, def, v);
  }
  const isObj = typeof v === 'object' && v !== null && !Array.isArray(v);
  const t = schema.type;
  if (t === 'object' && !isObj) return false;
  if (t === 'array' && !Array.isArray(v)) return false;
  if (t === 'string' && typeof v !== 'string') return false;
  if (t === 'boolean' && typeof v !== 'boolean') return false;
  if (t === 'integer' && !Number.isInteger(v)) return false;
  if ('const' in schema && v !== schema.const) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(v)) return false;
  if (typeof v === 'string') {
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(v)) return false;
    if (typeof schema.minLength === 'number' && [...v].length < schema.minLength) return false;
    if (typeof schema.maxLength === 'number' && [...v].length > schema.maxLength) return false;
  }
  if (typeof v === 'number') {
    if (typeof schema.minimum === 'number' && v < schema.minimum) return false;
    if (typeof schema.maximum === 'number' && v > schema.maximum) return false;
    if (typeof schema.exclusiveMinimum === 'number' && v <= schema.exclusiveMinimum) return false;
  }
  if (Array.isArray(v)) {
    if (typeof schema.minItems === 'number' && v.length < schema.minItems) return false;
    if (schema.items && !v.every((e) => valid(root, schema.items as Schema, e))) return false;
  }
  if (isObj) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (typeof schema.minProperties === 'number' && keys.length < schema.minProperties) return false;
    if (typeof schema.maxProperties === 'number' && keys.length > schema.maxProperties) return false;
    if (Array.isArray(schema.required) && !schema.required.every((k: string) => Object.hasOwn(o, k)))
      return false;
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const k of keys) {
      if (schema.propertyNames && !valid(root, schema.propertyNames as Schema, k)) return false;
      const sub = Object.hasOwn(props, k) ? props[k] : schema.additionalProperties;
      if (sub === false) return false;
      if (sub && typeof sub === 'object' && !valid(root, sub as Schema, o[k])) return false;
    }
  }
  return true;
}
const jsonOf = (buf: Buffer): Record<string, unknown> =>
  JSON.parse(buf.toString('utf8')) as Record<string, unknown>;

describe('rabinFingerprint64 (CRC-64-AVRO)', () => {
  it("matches the Avro specification's published vectors (share/test/data/schema-tests.txt)", () => {
    const vectors: [string, string][] = [
      ['"null"', '7195948357588979594'],
      ['"boolean"', '-6970731678124411036'],
      ['"int"', '8247732601305521295'],
      ['"long"', '-3434872931120570953'],
      ['{"name":"foo","type":"fixed","size":15}', '1756455273707447556'],
      ['{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}', '7843277075252814651'],
    ];
    for (const [canonical, signed] of vectors) {
      expect(BigInt.asIntN(64, rabinFingerprint64(Buffer.from(canonical))).toString()).toBe(signed);
    }
  });
});

describe('fingerprint table', () => {
  it('has every schema version on disk, its SHA-256 being the header value decoders look up', () => {
    const rows = fingerprintRows();
    expect(rows.map((r) => r.file)).toEqual(loadSchemaVersions().map((v) => v.file.split('/').pop()));
    const latest = (name: string): string | undefined =>
      rows.filter((r) => r.name === name).sort((a, b) => b.version - a.version)[0]?.sha256;
    expect(latest('stream-record')).toBe(SCHEMA_FINGERPRINTS.streamRecord);
    expect(latest('retraction')).toBe(SCHEMA_FINGERPRINTS.retraction);
    expect(latest('archived-record')).toBe(SCHEMA_FINGERPRINTS.archivedRecord);
    for (const r of rows) {
      expect(r.rabin).toMatch(/^[0-9a-f]{16}$/);
      expect(BigInt.asUintN(64, BigInt(r.rabinSigned)).toString(16).padStart(16, '0')).toBe(r.rabin);
    }
  });

  it('fingerprints the exported .avsc bytes as a plain Avro library would (no ttlstream type hooks)', () => {
    const files = schemaExportFiles();
    for (const row of fingerprintRows()) {
      const avsc_ = files.find((f) => f.name === row.file);
      const type = avsc.Type.forSchema(JSON.parse(avsc_!.content) as avsc.Schema);
      expect(type.fingerprint('sha256').toString('hex')).toBe(row.sha256);
      expect(
        rabinFingerprint64(Buffer.from(JSON.stringify(type.schema())))
          .toString(16)
          .padStart(16, '0'),
      ).toBe(row.rabin);
    }
  });
});

describe('JSON Schemas of the JSON encoding', () => {
  const remove = jsonSchemaFor('remove');
  const retract = jsonSchemaFor('retract');

  it('accept what the JSON encoder writes, for random records', () => {
    fc.assert(
      fc.property(recordArb, (record) => valid(remove, remove, jsonOf(encodeRemove(record, 'json').value))),
      { numRuns: 200 },
    );
    const r = sampleRecord();
    expect(valid(retract, retract, jsonOf(encodeRetraction(sampleRetraction(r), 'json').value))).toBe(true);
  });

  it('refuse what the contract refuses', () => {
    const good = jsonOf(encodeRemove(sampleRecord(), 'json').value);
    interface Json {
      eventName?: string;
      eventID?: string;
      futureField?: number;
      dynamodb: { SequenceNumber: string; Keys: Record<string, unknown>; OldImage: Record<string, unknown> };
    }
    const mutate = (f: (r: Json) => void): Record<string, unknown> => {
      const copy = structuredClone(good);
      f(copy as unknown as Json);
      return copy;
    };
    const bad = [
      mutate((r) => (r.eventName = 'INSERT')),
      mutate((r) => delete r.eventID),
      mutate((r) => (r.dynamodb.SequenceNumber = '12')),
      mutate((r) => (r.dynamodb.Keys = { pk: { SS: ['a'] } })),
      mutate((r) => (r.dynamodb.Keys = { a: { S: 'x' }, b: { S: 'y' }, c: { S: 'z' } })),
      mutate((r) => (r.dynamodb.OldImage.x = { S: 'a', N: '1' })),
      mutate((r) => (r.dynamodb.OldImage.x = { N: '1,5' })),
      mutate((r) => (r.dynamodb.OldImage.x = { B: 'AAE' })), // unpadded
      mutate((r) => (r.dynamodb.OldImage.x = { B: 'AA-_' })), // URL-safe alphabet
      mutate((r) => (r.dynamodb.OldImage.x = { SS: [] })),
      mutate((r) => (r.dynamodb.OldImage.x = { NULL: false })),
      mutate((r) => (r.dynamodb.OldImage.x = { M: { y: { Q: 'unknown type' } } })),
    ];
    for (const b of bad) expect(valid(remove, remove, b)).toBe(false);
    expect(
      valid(
        remove,
        remove,
        mutate((r) => (r.futureField = 1)),
      ),
    ).toBe(true); // additive changes are allowed
  });
});

describe('writeSchemaExport', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'schemas-export-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes every file, replaces same-named ones and leaves others alone', () => {
    writeFileSync(join(dir, 'stream-record.v1.avsc'), 'stale');
    writeFileSync(join(dir, 'mine.txt'), 'keep');
    const out = writeSchemaExport('out', dir);
    expect(writeSchemaExport(dir).files).toEqual(out.files);
    const names = readdirSync(dir).sort();
    expect(names).toEqual([...out.files.map((f) => f.name), 'mine.txt', 'out'].sort());
    expect(readFileSync(join(dir, 'stream-record.v1.avsc'), 'utf8')).toBe(
      readFileSync(loadSchemaVersions().find((v) => v.name === 'stream-record')!.file, 'utf8'),
    );
    expect(readFileSync(join(dir, 'mine.txt'), 'utf8')).toBe('keep');
  });

  it('refuses a path that is a file', () => {
    writeFileSync(join(dir, 'f'), '');
    expect(() => writeSchemaExport('f', dir)).toThrow('exists and is not a directory');
  });
});
