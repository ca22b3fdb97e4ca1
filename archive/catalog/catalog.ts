import { ValidationError } from '../../core/errors';
import type { Item } from '../../policy/types';
import { canonicalJson, canonicalNumber } from '../../schemas/canonical';
import type { ArchiveStorage } from '../storage';
import { listWithIndexes } from '../storage/key-index';
import {
  KeyIndexSchema,
  dayIndexPrefix,
  hourFolderOf,
  parseArchiveJson,
  parseDataFilePath,
  parseDayIndexPath,
  utcDateHour,
  type ParsedDataPath,
  type KeyIndex,
  type KeyIndexRow,
} from '../storage/layout';
import { decodeSegment } from '../storage/safe-segment';
import { filesOfHour, type CatalogFile, type Generations } from './hour';

export type { CatalogFile } from './hour';
import { lookUpDay } from './day-index';
import { digestOfIndexKey, readErasedDigests } from '../ledgers/erasure';
import { compareVersions } from './order';
import { assertRange, hourOverlaps, hourStartMs, inRange, listingPrefixes, type TimeRange } from './range';

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
  /**
   * The key indexes of the table's files in the window that may hold any of these key digests (`keyDigest`): a
   * day with a day key index (docs/decisions/0038) costs that index and the files it names, not every file.
   */
  keyIndexes(
    table: string,
    digests: ReadonlySet<string>,
    range?: TimeRange,
  ): AsyncIterable<{ file: CatalogFile; index: KeyIndex }>;
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

  /** The files readers see of each hour listed under `prefix` that overlaps the window (hour.ts). */
  private async *filesUnder(
    prefix: string,
    range: TimeRange | undefined,
    onDayIndex?: (path: string) => void,
  ): AsyncIterable<CatalogFile> {
    let hour: { folder: string; groups: Generations[] } | null = null;
    let group: Generations | null = null;
    for await (const { path, dataPath, isIndex, beside } of listWithIndexes(this.storage, prefix)) {
      const parsed = parseDataFilePath(dataPath);
      if (!parsed) {
        if (onDayIndex && parseDayIndexPath(path)) onDayIndex(path);
        continue;
      }
      if (group?.file.base !== parsed.base) group = null;
      const folder = hourFolderOf(parsed.base);
      if (hour && hour.folder !== folder) {
        yield* await filesOfHour(this.storage, hour.folder, hour.groups);
        hour = null;
      }
      if (!group) {
        const start = hourStartMs(parsed.date, parsed.hour);
        if (!hourOverlaps(start, range)) continue;
        group = newGroup(parsed, start);
        hour ??= { folder, groups: [] };
        hour.groups.push(group);
      }
      if (!isIndex) group.data.add(parsed.generation);
      else if (!beside || !group.index.has(parsed.generation)) group.index.set(parsed.generation, path);
    }
    if (hour) yield* await filesOfHour(this.storage, hour.folder, hour.groups);
  }

  async *scan(table: string, filter: ScanFilter = {}): AsyncIterable<CatalogRow> {
    assertRange(filter);
    const key = filter.key === undefined ? undefined : normalizeKey(filter.key);
    const { keyPrefix, hashKey } = filter;
    // The one place erased keys are left out: restore, replay, `archive show` and audit read here.
    const erased = await this.erasedDigests(table);
    // One key: only the files a day key index names (or that none covers) are read.
    const digests = key === undefined ? undefined : new Set([digestOfIndexKey(table, key)]);
    for await (const { index } of this.indexes(table, filter, digests)) {
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
          // A compacted file's rows say where each was read; a roll's index says it once.
          topic: row.topic ?? index.topic ?? '',
          partition: row.partition ?? index.partition ?? -1,
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

  /** The key indexes of the window (of the files that may hold `digests`, when given), in path order, read a few at a time. */
  private async *indexes(
    table: string,
    range: TimeRange,
    digests?: ReadonlySet<string>,
  ): AsyncIterable<{ file: CatalogFile; index: KeyIndex }> {
    const inFlight: Array<Promise<{ file: CatalogFile; index: KeyIndex }>> = [];
    const files = digests ? this.filesHolding(table, range, digests) : this.listFiles(table, range);
    for await (const file of files) {
      if (file.indexPath === null) continue;
      const read = this.readIndex(file.indexPath, file.path, table).then((index) => ({ file, index }));
      // Awaited in order below; this only keeps a failure from being reported as unhandled meanwhile.
      read.catch(() => undefined);
      inFlight.push(read);
      if (inFlight.length >= READ_AHEAD) yield await (inFlight.shift() as (typeof inFlight)[number]);
    }
    while (inFlight.length > 0) yield await (inFlight.shift() as (typeof inFlight)[number]);
  }

  async *keyIndexes(
    table: string,
    digests: ReadonlySet<string>,
    range: TimeRange = {},
  ): AsyncIterable<{ file: CatalogFile; index: KeyIndex }> {
    assertRange(range);
    yield* this.indexes(table, range, digests);
  }

  /**
   * The window's files, less those a day key index says hold none of `digests` (docs/decisions/0038): a day is
   * gathered, then its index looked up (found in the listing, or listed for a window listed hour by hour).
   */
  private async *filesHolding(
    table: string,
    range: TimeRange,
    digests: ReadonlySet<string>,
  ): AsyncIterable<CatalogFile> {
    const seen = new Map<string, string[]>();
    const onDayIndex = (path: string): void => {
      const date = parseDayIndexPath(path)?.date as string;
      seen.set(date, [...(seen.get(date) ?? []), path]);
    };
    const narrow = async (date: string, files: CatalogFile[], hourly: boolean): Promise<CatalogFile[]> => {
      const paths = [...(seen.get(date) ?? [])];
      if (hourly && paths.length === 0)
        for await (const p of this.storage.list(dayIndexPrefix(table, date))) paths.push(p);
      const found = paths.length > 0 ? await lookUpDay(this.storage, paths, digests) : null;
      if (!found) return files;
      return files.filter((f) => !found.covered.has(f.base) || found.holding.has(f.base));
    };
    let day: { date: string; files: CatalogFile[]; hourly: boolean } | null = null;
    for (const prefix of listingPrefixes(table, range)) {
      const hourly = prefix.includes('/hour=');
      for await (const file of this.filesUnder(prefix, range, onDayIndex)) {
        const date = utcDateHour(file.hourStartMs).date;
        if (day && day.date !== date) {
          yield* await narrow(day.date, day.files, day.hourly);
          day = null;
        }
        day ??= { date, files: [], hourly };
        day.files.push(file);
      }
    }
    if (day) yield* await narrow(day.date, day.files, day.hourly);
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

function newGroup(parsed: ParsedDataPath, start: number): Generations {
  return {
    file: {
      path: parsed.base,
      base: parsed.base,
      generation: 0,
      indexPath: null,
      hourStartMs: start,
      partition: parsed.partition,
      first: parsed.first,
      last: parsed.last,
      compaction: parsed.compaction,
      superseded: [],
    },
    data: new Set(),
    index: new Map(),
  };
}

function show(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch {
    return String(value);
  }
}
