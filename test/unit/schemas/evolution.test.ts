import { join } from 'node:path';
import {
  SCHEMA_NAMES,
  SchemaRegistry,
  checkCompatibility,
  defaultSchemaDir,
  loadSchemaVersions,
  toAvroStreamRecord,
  type SchemaVersion,
} from '../../../schemas';
import { sampleRecord } from '../../support/stream-samples';

const onDisk = loadSchemaVersions(defaultSchemaDir());
const fixture = (dir: 'compatible' | 'incompatible'): SchemaVersion[] =>
  loadSchemaVersions(join(__dirname, 'fixtures', dir));

describe('schema evolution rule: every version reads every other version of its family', () => {
  it('holds for all versions in schemas/avro', () => {
    expect(checkCompatibility(onDisk)).toEqual([]);
  });

  it('finds every family on disk, numbered 1..n without gaps', () => {
    for (const name of SCHEMA_NAMES) {
      const versions = onDisk.filter((v) => v.name === name).map((v) => v.version);
      expect(versions).toEqual(versions.map((_, i) => i + 1));
      expect(versions.length).toBeGreaterThan(0);
    }
  });

  it('fails for a deliberately incompatible next version (proves the check can fail)', () => {
    const problems = checkCompatibility([...onDisk, ...fixture('incompatible')]);
    const pairs = problems.map((p) => `${p.reader} <- ${p.writer}`);
    expect(pairs).toEqual(
      expect.arrayContaining([
        'stream-record.v2 <- stream-record.v1',
        'stream-record.v1 <- stream-record.v2',
      ]),
    );
  });

  it('passes for a compatible next version (an optional field with a default)', () => {
    expect(checkCompatibility([...onDisk, ...fixture('compatible')])).toEqual([]);
  });

  it('a compatible v2 reader decodes v1 data, and a v1 reader decodes v2 data', () => {
    const v2 = fixture('compatible')[0] as SchemaVersion;
    const registry = new SchemaRegistry([...onDisk, v2]);
    expect(registry.latest('stream-record')).toBe(v2);
    const v1 = onDisk.find((v) => v.name === 'stream-record' && v.version === 1) as SchemaVersion;
    const avro = toAvroStreamRecord(sampleRecord());

    const oldData = v1.type.toBuffer(avro);
    const read = registry.decode(registry.find(v1.fingerprint) as SchemaVersion, oldData) as Record<
      string,
      unknown
    >;
    expect(read.ttlAttribute).toBeNull();
    expect(read.eventID).toBe(avro.eventID);

    const newData = v2.type.toBuffer({ ...avro, ttlAttribute: 'expiresAt' });
    const back = v1.type.fromBuffer(newData, v1.type.createResolver(v2.type)) as Record<string, unknown>;
    expect(back.eventID).toBe(avro.eventID);
    expect(back.ttlAttribute).toBeUndefined();
  });

  it('keeps an attribute named __proto__ when resolving an older writer schema', () => {
    const v2 = fixture('compatible')[0] as SchemaVersion;
    const registry = new SchemaRegistry([...onDisk, v2]);
    const v1 = registry.find(
      onDisk.find((v) => v.name === 'stream-record')?.fingerprint ?? '',
    ) as SchemaVersion;
    const oldImage = Object.fromEntries([
      ['pk', { S: 'a' }],
      ['__proto__', { S: 'kept' }],
    ]);
    const avro = toAvroStreamRecord(sampleRecord({ keys: { pk: { S: 'a' } }, oldImage }));
    const read = registry.decode(v1, v1.type.toBuffer(avro)) as typeof avro;
    expect(Object.keys(read.dynamodb.OldImage)).toEqual(['pk', '__proto__']);
  });

  it('refuses two files with the same canonical schema (a version bump without a change)', () => {
    const v1 = onDisk.find((v) => v.name === 'stream-record') as SchemaVersion;
    expect(() => new SchemaRegistry([...onDisk, { ...v1, version: 2 }])).toThrow(/canonically identical/);
  });
});
