import { openCatalog, type TimeRange } from '../../archive/catalog';
import {
  KeyIndexSchema,
  decodeSegment,
  openArchiveStorage,
  parseArchiveJson,
  parseDataFilePath,
  type ArchiveStorage,
} from '../../archive/storage';
import { NotFoundError, ValidationError } from '../../core/errors';
import { canonicalJson, toJsonMap, type ArchivedRecord } from '../../schemas';
import type { CliContext } from '../kit/context';
import type { Style } from '../kit/io';
import { decodeArchiveFile, readArchiveFile } from '../../archive/reader';
import { rangeOf } from '../kit/archive-root';

/** What `ttlstream archive` does, loaded only when an archive command runs. */

export interface ArchiveFileInfo {
  path: string;
  table: string;
  topic: string;
  partition: number;
  firstOffset: string;
  lastOffset: string;
  hour: string;
  /** A compacted file (docs/decisions/0037): which compaction wrote it; its partition is then -1, its offsets 0. */
  compaction: { number: number; file: number; files: number } | null;
  /** Rows (REMOVEs and retractions) per the key index; null when the file has no index yet. */
  records: number | null;
  removes: number | null;
  retractions: number | null;
}

export function openStorage(ctx: CliContext): ArchiveStorage {
  return openArchiveStorage(ctx.config, ctx.config.archive.url.startsWith('s3://') ? ctx.s3 : undefined);
}

/** Data files of the archive (one table, or all), with row counts from their key indexes. */
export async function listArchiveFiles(
  storage: ArchiveStorage,
  options: { table?: string; range?: TimeRange } = {},
): Promise<ArchiveFileInfo[]> {
  // The catalog's listing says where each file's index is (under _index/, or beside it in an older archive).
  const files: Array<{ path: string; indexPath: string | null }> = [];
  const catalog = openCatalog(storage);
  const listed =
    options.table !== undefined
      ? catalog.listFiles(options.table, options.range)
      : catalog.listEveryTable(options.range);
  for await (const f of listed) files.push(f);
  const out: ArchiveFileInfo[] = [];
  for (const { path, indexPath } of files) {
    const parsed = parseDataFilePath(path);
    if (!parsed) continue;
    const body = indexPath === null ? null : await storage.get(indexPath);
    const index = body && indexPath ? parseArchiveJson(KeyIndexSchema, body, indexPath) : null;
    const removes = index ? index.rows.filter((r) => r.kind === 'remove').length : null;
    out.push({
      path,
      table: index?.table ?? decodeSegment(parsed.tableSegment) ?? parsed.tableSegment,
      topic:
        index?.topic ??
        (parsed.compaction ? '*' : (decodeSegment(parsed.topicSegment) ?? parsed.topicSegment)),
      partition: parsed.partition,
      firstOffset: parsed.first.toString(),
      lastOffset: parsed.last.toString(),
      hour: `${parsed.date}T${parsed.hour}:00Z`,
      compaction: parsed.compaction,
      records: index ? index.rows.length : null,
      removes,
      retractions: index && removes !== null ? index.rows.length - removes : null,
    });
  }
  return out;
}

export async function recordsOfFile(storage: ArchiveStorage, file: string): Promise<ArchivedRecord[]> {
  if (!parseDataFilePath(file)) throw new ValidationError(`not an archive data file path: ${file}`);
  const body = await storage.get(file);
  if (!body) throw new NotFoundError(`no archive file ${file} under ${storage.root}`);
  const rows = await decodeArchiveFile(body, file);
  // A file read whole still hides erased keys (a superseded generation not yet removed holds them).
  const catalog = openCatalog(storage);
  const out: ArchivedRecord[] = [];
  for (const row of rows) {
    const keys = row.record?.dynamodb.Keys ?? row.retraction?.Keys;
    if (keys && (await catalog.isErased(row.table, canonicalJson(keys)))) continue;
    out.push(row);
  }
  return out;
}

/** Rows found through the key indexes, read from their data files (each file decoded once). */
export async function recordsOfTable(
  storage: ArchiveStorage,
  opts: { table?: string; key?: string; keyPrefix?: string; from?: number; to?: number },
): Promise<ArchivedRecord[]> {
  const filter = {
    ...(opts.key !== undefined ? { key: opts.key } : {}),
    ...(opts.keyPrefix !== undefined ? { keyPrefix: opts.keyPrefix } : {}),
    ...(rangeOf(opts) ?? {}),
  };
  const byFile = new Map<string, Array<{ row: number; eventID: string; kind: string }>>();
  for await (const row of openCatalog(storage).scan(opts.table as string, filter)) {
    byFile.set(row.file, [...(byFile.get(row.file) ?? []), row]);
  }
  const out: ArchivedRecord[] = [];
  for (const [file, wanted] of byFile) {
    // A file a compaction replaced since it was listed reads as the files that took its place.
    const rows = await readArchiveFile(storage, file);
    for (const w of wanted) {
      // The row number is a hint; the eventID is what names the row (as restore reads it).
      const at = rows[w.row];
      const row =
        at?.eventID === w.eventID && at.kind === w.kind
          ? at
          : rows.find((r) => r.eventID === w.eventID && r.kind === w.kind);
      if (row) out.push(row);
    }
  }
  return out.sort((a, b) => deletedAt(a) - deletedAt(b));
}

function deletedAt(row: ArchivedRecord): number {
  return row.record
    ? row.record.dynamodb.ApproximateCreationDateTime * 1000
    : (row.retraction?.retractedAt ?? 0);
}

export function describeRow(row: ArchivedRecord, s: Style): string {
  const when = new Date(deletedAt(row)).toISOString();
  const where = s.dim(`${row.topic} p${row.partition}@${row.offset}`);
  if (row.record) {
    const r = row.record;
    const image = JSON.stringify(toJsonMap(r.dynamodb.OldImage ?? {}));
    return (
      `${when}  ${s.red('REMOVE ')}  ${JSON.stringify(toJsonMap(r.dynamodb.Keys))}  eventID ${r.eventID}  ${where}\n` +
      `    OldImage ${image}`
    );
  }
  const t = row.retraction;
  return `${when}  ${s.yellow('RETRACT')}  ${JSON.stringify(toJsonMap(t?.Keys ?? {}))}  retracts ${t?.retractsEventID ?? '?'} (${t?.reason ?? '?'})  ${where}`;
}
