import { ValidationError } from '../../core/errors';
import type { Item } from '../../policy/types';
import { canonicalJson, canonicalNumber } from '../../schemas/canonical';
import type { ArchiveStorage } from '../storage';
import { listWithIndexes } from '../storage/key-index';
import {
  KeyIndexSchema,
  generationPath,
  parseArchiveJson,
  parseDataFilePath,
  type KeyIndex,
  type KeyIndexRow,
} from '../storage/layout';
import { decodeSegment } from '../storage/safe-segment';
import { digestOfIndexKey, readErasedDigests } from '../erase/ledger';
import { compareVersions } from './order';
import { assertRange, hourOverlaps, hourStartMs, inRange, listingPrefixes, type TimeRange } from './range';

/** One data file of a table, found by listing (never by opening it). */
export interface CatalogFile {
  /** Data file path, relative to the archive root: the file's current generation. */
  path: string;
  /** The path of generation 0, as manifests name it. */
  base: string;
  /** 0 as the archiver wrote it; g after g rewrites by erasures. */
  generation: number;
  /**
   * Its key index (under `_index/`, or beside the data file in an archive written before docs/decisions/0033); null
   * while only the data file exists (a roll interrupted before its index).
   */
  indexPath: string | null;
  /** Start of the UTC deletion hour the file belongs to. */
  hourStartMs: number;
  partition: number;
  first: bigint;
  last: bigint;
}

/** A key index row with the file it points into. */
export interface CatalogRow extends KeyIndexRow {
  file: string;
  table: string;
  topic: string;
  partition: number;
}

/** An archived REMOVE of one key, and whether a later retraction says the deletion never happened. */
export interface CatalogVersion extends CatalogRow {
  retracted: boolean;
}

export interface ScanFilter extends TimeRange {
  /** Exactly this item key: DynamoDB JSON of the key attributes, or its canonical JSON. */
  key?: Item | string;
  /** Prefix of the hash-key value (S as is, N as written, B as base64). */
  keyPrefix?: string;
  /** The table's hash-key attribute; needed with `keyPrefix` when keys have a sort key as well. */
  hashKey?: string;
}

export interface Catalog {
  /** Data files of the table whose deletion hour overlaps the window, in path order. */
  listFiles(table: string, range?: TimeRange): AsyncIterable<CatalogFile>;
  /** Data files of every table whose deletion hour overlaps the window, in path order: one listing of the archive. */
  listEveryTable(range?: TimeRange): AsyncIterable<CatalogFile & { table: string }>;
  /** Index rows (REMOVE and retraction rows) matching the filter, read from the key indexes only. */
  scan(table: string, filter?: ScanFilter): AsyncIterable<CatalogRow>;
  /** Archived REMOVEs of one key in the window, oldest first, each marked when it was retracted. */
  findVersions(table: string, key: Item | string, range?: TimeRange): Promise<CatalogVersion[]>;
  /** eventIDs retracted by retraction rows deleted at or after `range.fromMs` (to the end of the archive). */
  retractedEventIDs(table: string, range?: TimeRange): Promise<Set<string>>;
  /**
   * Whether the key (canonical JSON, as in a key index) is in the table's erasure ledger. `scan`
   * and everything built on it already leave such rows out; this is for readers of whole files.
   */
  isErased(table: string, canonicalKey: string): Promise<boolean>;
}

/** Key indexes read at once; enough to hide S3 latency, few enough to bound memory. */
const READ_AHEAD = 8;

export function openCatalog(storage: ArchiveStorage): Catalog {
  return new ArchiveCatalog(storage);
}

/**
 * The comparable form of an item key: canonical JSON with numbers in one spelling, so `{"N":"1.0"}`
 * finds the key archived as `{"N":"1"}`. Accepts DynamoDB JSON (object or string).
 */
export function normalizeKey(key: Item | string): string {
  if (typeof key === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(key);
    } catch {
      throw new ValidationError(`key is not JSON: ${key}`);
    }
    return normalizeKey(asItem(parsed, key));
  }
  const item = asItem(key, show(key));
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) {
    try {
      out[name] = value.N !== undefined ? { N: canonicalNumber(value.N) } : value;
    } catch (err) {
      throw new ValidationError(`key attribute ${name}: ${(err as Error).message}`);
    }
  }
  return canonicalJson(out);
}

function asItem(value: unknown, shown: string): Item {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0)
    throw new ValidationError(`key must be an object of DynamoDB attribute values, got ${shown}`);
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.keys(v).length !== 1)
      throw new ValidationError(
        `key attribute ${name} is not a DynamoDB attribute value (e.g. {"S":"a"}): ${shown}`,
      );
  }
  return value as Item;
}

/** The scalar value of the hash-key attribute of a canonical key, as keyPrefix matches it. */
export function hashKeyValue(canonicalKey: string, hashKey: string | undefined): string | undefined {
  const parsed = JSON.parse(canonicalKey) as Record<string, Record<string, unknown>>;
  const names = Object.keys(parsed);
  let name = hashKey;
  if (name === undefined) {
    if (names.length !== 1)
      throw new ValidationError(
        'keyPrefix on a table with a sort key needs the hash-key attribute name (hashKey)',
      );
    name = names[0] as string;
  }
  const value = parsed[name];
  if (!value) return undefined;
  const scalar = value.S ?? value.N ?? value.B;
  return typeof scalar === 'string' ? scalar : undefined;
}

interface Generations {
  file: CatalogFile;
  data: Set<number>;
  /** Per generation, where its index was listed (`_index/` wins over beside: it is where readers look first). */
  index: Map<number, string>;
}

/**
 * The file readers see: the highest generation that has its key index (an erasure writes the index
 * of a new generation last, so its presence is the switch), else the newest data file alone.
 */
function currentGeneration(g: Generations): CatalogFile | null {
  const complete = [...g.data].filter((n) => g.index.has(n));
  const pick = complete.length > 0 ? Math.max(...complete) : g.data.size > 0 ? Math.max(...g.data) : null;
  if (pick === null) return null;
  const path = generationPath(g.file.base, pick);
  return { ...g.file, path, generation: pick, indexPath: g.index.get(pick) ?? null };
}

class ArchiveCatalog implements Catalog {
  private readonly erased = new Map<string, Promise<Set<string>>>();

  constructor(private readonly storage: ArchiveStorage) {}

  async *listFiles(table: string, range?: TimeRange): AsyncIterable<CatalogFile> {
    assertRange(range);
    for (const prefix of listingPrefixes(table, range)) yield* this.filesUnder(prefix, range);
  }

  async *listEveryTable(range?: TimeRange): AsyncIterable<CatalogFile & { table: string }> {
    assertRange(range);
    for await (const file of this.filesUnder('table=', range)) {
      const parsed = parseDataFilePath(file.base);
      if (parsed) yield { ...file, table: decodeSegment(parsed.tableSegment) ?? parsed.tableSegment };
    }
  }

  /** The current generation of each data file listed under `prefix` whose hour overlaps the window. */
  private async *filesUnder(prefix: string, range: TimeRange | undefined): AsyncIterable<CatalogFile> {
    let group: Generations | null = null;
    for await (const { path, dataPath, isIndex, beside } of listWithIndexes(this.storage, prefix)) {
      const parsed = parseDataFilePath(dataPath);
      if (!parsed) continue;
      if (group && group.file.base !== parsed.base) {
        const chosen = currentGeneration(group);
        if (chosen) yield chosen;
        group = null;
      }
      if (!group) {
        const start = hourStartMs(parsed.date, parsed.hour);
        if (!hourOverlaps(start, range)) continue;
        group = {
          file: {
            path: parsed.base,
            base: parsed.base,
            generation: 0,
            indexPath: null,
            hourStartMs: start,
            partition: parsed.partition,
            first: parsed.first,
            last: parsed.last,
          },
          data: new Set(),
          index: new Map(),
        };
      }
      if (!isIndex) group.data.add(parsed.generation);
      else if (!beside || !group.index.has(parsed.generation)) group.index.set(parsed.generation, path);
    }
    if (group) {
      const chosen = currentGeneration(group);
      if (chosen) yield chosen;
    }
  }

  async *scan(table: string, filter: ScanFilter = {}): AsyncIterable<CatalogRow> {
    assertRange(filter);
    const key = filter.key === undefined ? undefined : normalizeKey(filter.key);
    const { keyPrefix, hashKey } = filter;
    // The one place erased keys are left out: restore, replay, `archive show` and audit read here.
    const erased = await this.erasedDigests(table);
    for await (const index of this.indexes(table, filter)) {
      for (const row of index.rows) {
        if (!inRange(row.deletedAtMs, filter)) continue;
        if (erased.size > 0 && erased.has(digestOfIndexKey(table, row.key))) continue;
        if (key !== undefined && row.key !== key && normalizeKey(row.key) !== key) continue;
        if (keyPrefix !== undefined && !(hashKeyValue(row.key, hashKey) ?? '').startsWith(keyPrefix))
          continue;
        yield {
          ...row,
          file: index.file,
          table: index.table,
          topic: index.topic,
          partition: index.partition,
        };
      }
    }
  }

  async findVersions(table: string, key: Item | string, range?: TimeRange): Promise<CatalogVersion[]> {
    // A retraction follows its REMOVE, so retractions are looked for from the window's start on.
    const removes: CatalogRow[] = [];
    const retracted = new Set<string>();
    const seen = new Set<string>();
    const from = range?.fromMs === undefined ? {} : { fromMs: range.fromMs };
    for await (const row of this.scan(table, { key, ...from })) {
      if (row.kind === 'retract') {
        if (row.retractsEventID) retracted.add(row.retractsEventID);
      } else if (inRange(row.deletedAtMs, range) && !seen.has(row.eventID)) {
        seen.add(row.eventID);
        removes.push(row);
      }
    }
    return removes.sort(compareVersions).map((r) => ({ ...r, retracted: retracted.has(r.eventID) }));
  }

  async retractedEventIDs(table: string, range?: TimeRange): Promise<Set<string>> {
    const out = new Set<string>();
    const from = range?.fromMs === undefined ? {} : { fromMs: range.fromMs };
    for await (const row of this.scan(table, from)) {
      if (row.kind === 'retract' && row.retractsEventID) out.add(row.retractsEventID);
    }
    return out;
  }

  async isErased(table: string, canonicalKey: string): Promise<boolean> {
    const erased = await this.erasedDigests(table);
    return erased.size > 0 && erased.has(digestOfIndexKey(table, canonicalKey));
  }

  /** Read once per catalog: a catalog lives for one command, and an erasure is rare. */
  private erasedDigests(table: string): Promise<Set<string>> {
    let read = this.erased.get(table);
    if (!read) {
      read = readErasedDigests(this.storage, table);
      this.erased.set(table, read);
    }
    return read;
  }

  /** The key indexes of the window, in path order, read a few at a time. */
  private async *indexes(table: string, range: TimeRange): AsyncIterable<KeyIndex> {
    const inFlight: Array<Promise<KeyIndex>> = [];
    for await (const file of this.listFiles(table, range)) {
      if (file.indexPath === null) continue;
      const read = this.readIndex(file.indexPath, file.path, table);
      // Awaited in order below; this only keeps a failure from being reported as unhandled meanwhile.
      read.catch(() => undefined);
      inFlight.push(read);
      if (inFlight.length >= READ_AHEAD) yield await (inFlight.shift() as Promise<KeyIndex>);
    }
    while (inFlight.length > 0) yield await (inFlight.shift() as Promise<KeyIndex>);
  }

  /** The index, with `file` set to the data file it indexes (the path the reader opens). */
  private async readIndex(path: string, dataPath: string, table: string): Promise<KeyIndex> {
    const body = await this.storage.get(path);
    if (body === null) throw new ValidationError(`${path}: key index listed but gone`);
    const index = parseArchiveJson(KeyIndexSchema, body, path);
    if (index.table !== table)
      throw new ValidationError(`${path}: indexes table ${index.table}, not ${table}`);
    const base = dataPath.slice(dataPath.lastIndexOf('/') + 1);
    if (!index.file.endsWith(base))
      throw new ValidationError(`${path}: indexes ${index.file}, not ${dataPath}`);
    return { ...index, file: dataPath };
  }
}

function show(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch {
    return String(value);
  }
}
