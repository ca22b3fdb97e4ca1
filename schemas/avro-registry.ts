import avsc from 'avsc';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataError } from '../core/errors';

/** The schema families; each lives as `schemas/avro/<name>.v<N>.avsc`, N = 1, 2, ... */
export const SCHEMA_NAMES = ['stream-record', 'retraction', 'archived-record'] as const;
export type SchemaName = (typeof SCHEMA_NAMES)[number];

export interface SchemaVersion {
  name: SchemaName;
  version: number;
  file: string;
  type: avsc.Type;
  /** SHA-256 of the Parsing Canonical Form, lower-case hex. */
  fingerprint: string;
}

const FILE_PATTERN = /^(stream-record|retraction|archived-record)\.v(\d+)\.avsc$/;

/**
 * Where the .avsc files are: next to this module when run from source, or the repository's
 * schemas/avro when run from dist/ (tsc does not copy them).
 */
export function defaultSchemaDir(): string {
  const candidates = [join(__dirname, 'avro'), join(__dirname, '..', '..', 'schemas', 'avro')];
  const found = candidates.find((dir) => existsSync(dir));
  if (!found) throw new DataError(`Avro schema directory not found (looked in ${candidates.join(', ')})`);
  return found;
}

/** Parse one schema the way every ttlstream reader and writer does. */
export function parseAvroSchema(schema: avsc.Schema): avsc.Type {
  return avsc.Type.forSchema(schema, { typeHook: keepProtoKeysHook });
}

export function fingerprintOf(type: avsc.Type): string {
  return type.fingerprint('sha256').toString('hex');
}

/** Every schema version in `dir`, sorted by name then version. Throws on a malformed file. */
export function loadSchemaVersions(dir: string = defaultSchemaDir()): SchemaVersion[] {
  const versions: SchemaVersion[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.avsc')) continue;
    const m = FILE_PATTERN.exec(file);
    if (!m) throw new DataError(`unexpected schema file name ${file}: expected <name>.v<N>.avsc`);
    const path = join(dir, file);
    let type: avsc.Type;
    try {
      type = parseAvroSchema(JSON.parse(readFileSync(path, 'utf8')) as avsc.Schema);
    } catch (err) {
      throw new DataError(`invalid Avro schema ${path}: ${(err as Error).message}`, { cause: err });
    }
    versions.push({
      name: m[1] as SchemaName,
      version: Number(m[2]),
      file: path,
      type,
      fingerprint: fingerprintOf(type),
    });
  }
  return versions.sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
}

/** The schema versions of one process: the newest of each family writes; any known one can be read. */
export class SchemaRegistry {
  private readonly byFingerprint = new Map<string, SchemaVersion>();
  private readonly current = new Map<SchemaName, SchemaVersion>();
  private readonly resolvers = new Map<string, avsc.Resolver>();

  constructor(readonly versions: SchemaVersion[]) {
    for (const v of versions) {
      const clash = this.byFingerprint.get(v.fingerprint);
      if (clash)
        throw new DataError(
          `${v.file} is canonically identical to ${clash.file}; bump only on a real change`,
        );
      this.byFingerprint.set(v.fingerprint, v);
      const cur = this.current.get(v.name);
      if (!cur || v.version > cur.version) this.current.set(v.name, v);
    }
    for (const name of SCHEMA_NAMES) {
      if (!this.current.has(name)) throw new DataError(`no Avro schema version found for ${name}`);
    }
  }

  latest(name: SchemaName): SchemaVersion {
    const v = this.current.get(name);
    if (!v) throw new DataError(`no Avro schema version for ${name}`);
    return v;
  }

  find(fingerprint: string): SchemaVersion | undefined {
    return this.byFingerprint.get(fingerprint.toLowerCase());
  }

  /**
   * Decode `buf` written with `writer` into the current reader shape of its family. Throws on
   * bytes that do not decode (truncated, trailing data, bad union index).
   */
  decode(writer: SchemaVersion, buf: Buffer): unknown {
    const reader = this.latest(writer.name);
    if (writer.fingerprint === reader.fingerprint) return reader.type.fromBuffer(buf);
    let resolver = this.resolvers.get(writer.fingerprint);
    if (!resolver) {
      resolver = reader.type.createResolver(writer.type);
      this.resolvers.set(writer.fingerprint, resolver);
    }
    return reader.type.fromBuffer(buf, resolver);
  }
}

let defaultRegistry: SchemaRegistry | undefined;
export function schemaRegistry(): SchemaRegistry {
  defaultRegistry ??= new SchemaRegistry(loadSchemaVersions());
  return defaultRegistry;
}

// ---------------------------------------------------------------------------------------------
// avsc decodes maps with `val[key] = value`, which drops an entry whose key is "__proto__" (a legal
// DynamoDB attribute name) by setting the object's prototype instead. Our types build their maps
// with a subclass whose reader defines such a key as an own property. Resolvers and container-file
// decoders built from our types (readerSchema: <our type>) inherit the fix, because avsc resolvers
// take the reader type's `_read`.

interface Tap {
  readLong(): number;
  skipLong(): void;
  readString(): string;
}

class ProtoSafeMapType extends avsc.types.MapType {
  _read(tap: Tap): Record<string, unknown> {
    const values = this.valuesType as unknown as { _read(tap: Tap): unknown };
    const out: Record<string, unknown> = {};
    for (;;) {
      let n = tap.readLong();
      if (n === 0) return out;
      if (n < 0) {
        n = -n;
        tap.skipLong(); // block size in bytes, unused
      }
      while (n-- > 0) {
        const key = tap.readString();
        const value = values._read(tap);
        if (key === '__proto__')
          Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
        else out[key] = value;
      }
    }
  }
}

function keepProtoKeysHook(schema: avsc.Schema, opts: avsc.ForSchemaOptions): avsc.Type | undefined {
  if (
    typeof schema === 'object' &&
    schema !== null &&
    !Array.isArray(schema) &&
    (schema as { type?: unknown }).type === 'map'
  ) {
    return new ProtoSafeMapType(schema as avsc.schema.MapType, opts);
  }
  return undefined;
}
