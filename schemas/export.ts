import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ValidationError } from '../core/errors';
import { asyncApiDocumentText } from './asyncapi';
import { loadSchemaVersions, type SchemaVersion } from './avro-registry';
import { jsonSchemaFor } from './json-schema';
import { KINDS, type RecordKind } from './headers';
import { schemaRegistry } from './avro-registry';
import { STREAM_SCHEMA_OF, fullNameOf, subjectFor, type SubjectNameStrategy } from './subjects';

/**
 * What `ttlstream schemas export` writes, for consumers in other languages: every .avsc version as shipped, a JSON
 * Schema per message kind for the JSON encoding, the fingerprints of every Avro version, the registry subjects and the
 * AsyncAPI document of the topics.
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
    // Its Avro payloads refer to the .avsc files written beside it.
    { name: 'asyncapi.json', content: asyncApiDocumentText({ avroDir: './' }) },
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
