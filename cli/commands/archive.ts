import { Command } from 'commander';
import { openCatalog, type TimeRange } from '../../archiver/catalog';
import {
  INDEX_EXT,
  KeyIndexSchema,
  decodeSegment,
  openArchiveStorage,
  parseArchiveJson,
  parseDataFilePath,
  type ArchiveStorage,
} from '../../archiver/storage';
import { NotFoundError, ValidationError } from '../../core/errors';
import { toJsonMap, type ArchivedRecord } from '../../schemas';
import { archivedToJson, readArchiveFile } from '../archive-read';
import { action, argParser, example, jsonOption, type CommandEnv } from '../command-kit';
import type { CliContext } from '../context';
import { parseInstant } from '../duration';
import { printJson, renderTable, style, useColour, type Style } from '../io';

export interface ArchiveFileInfo {
  path: string;
  table: string;
  topic: string;
  partition: number;
  firstOffset: string;
  lastOffset: string;
  hour: string;
  /** Rows (REMOVEs and retractions) per the key index; null when the file has no index yet. */
  records: number | null;
  removes: number | null;
  retractions: number | null;
}

/** Archive location flag shared by the archive commands (and printed by the demo). */
export function archiveOverrides(opts: Record<string, unknown>): { archive?: { url: string } } {
  return typeof opts.archive === 'string' ? { archive: { url: opts.archive } } : {};
}

export function openStorage(ctx: CliContext): ArchiveStorage {
  return openArchiveStorage(ctx.config, ctx.config.archive.url.startsWith('s3://') ? ctx.s3 : undefined);
}

function rangeOf(opts: { from?: number; to?: number }): TimeRange | undefined {
  if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to) {
    throw new ValidationError('--from is after --to');
  }
  if (opts.from === undefined && opts.to === undefined) return undefined;
  return {
    ...(opts.from !== undefined ? { fromMs: opts.from } : {}),
    ...(opts.to !== undefined ? { toMs: opts.to } : {}),
  };
}

/** Data files of the archive (one table, or all), with row counts from their key indexes. */
export async function listArchiveFiles(
  storage: ArchiveStorage,
  options: { table?: string; range?: TimeRange } = {},
): Promise<ArchiveFileInfo[]> {
  const paths: string[] = [];
  if (options.table !== undefined) {
    for await (const f of openCatalog(storage).listFiles(options.table, options.range)) paths.push(f.path);
  } else {
    for await (const p of storage.list('table=')) if (parseDataFilePath(p)) paths.push(p);
  }
  const out: ArchiveFileInfo[] = [];
  for (const path of paths) {
    const parsed = parseDataFilePath(path);
    if (!parsed) continue;
    const body = await storage.get(path + INDEX_EXT);
    const index = body ? parseArchiveJson(KeyIndexSchema, body, path + INDEX_EXT) : null;
    const removes = index ? index.rows.filter((r) => r.kind === 'remove').length : null;
    out.push({
      path,
      table: index?.table ?? decodeSegment(parsed.tableSegment) ?? parsed.tableSegment,
      topic: index?.topic ?? decodeSegment(parsed.topicSegment) ?? parsed.topicSegment,
      partition: parsed.partition,
      firstOffset: parsed.first.toString(),
      lastOffset: parsed.last.toString(),
      hour: `${parsed.date}T${parsed.hour}:00Z`,
      records: index ? index.rows.length : null,
      removes,
      retractions: index && removes !== null ? index.rows.length - removes : null,
    });
  }
  return out;
}

interface ShowFlags {
  table?: string;
  key?: string;
  keyPrefix?: string;
  from?: number;
  to?: number;
  limit: number;
  json?: boolean;
}

function positiveInt(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || !Number.isSafeInteger(n)) {
    throw new ValidationError(`expected a positive whole number, got "${text}"`);
  }
  return n;
}

async function recordsOfFile(storage: ArchiveStorage, file: string): Promise<ArchivedRecord[]> {
  if (!parseDataFilePath(file)) throw new ValidationError(`not an archive data file path: ${file}`);
  const body = await storage.get(file);
  if (!body) throw new NotFoundError(`no archive file ${file} under ${storage.root}`);
  return readArchiveFile(body);
}

/** Rows found through the key indexes, read from their data files (each file decoded once). */
async function recordsOfTable(storage: ArchiveStorage, opts: ShowFlags): Promise<ArchivedRecord[]> {
  const filter = {
    ...(opts.key !== undefined ? { key: opts.key } : {}),
    ...(opts.keyPrefix !== undefined ? { keyPrefix: opts.keyPrefix } : {}),
    ...(rangeOf(opts) ?? {}),
  };
  const byFile = new Map<string, number[]>();
  for await (const row of openCatalog(storage).scan(opts.table as string, filter)) {
    byFile.set(row.file, [...(byFile.get(row.file) ?? []), row.row]);
  }
  const out: ArchivedRecord[] = [];
  for (const [file, wanted] of byFile) {
    const body = await storage.get(file);
    if (!body) continue; // listed by its index but gone since: nothing to show
    const rows = await readArchiveFile(body);
    for (const i of wanted) {
      const row = rows[i];
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

function describeRow(row: ArchivedRecord, s: Style): string {
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

export function archiveCommand(env: CommandEnv): Command {
  const archive = new Command('archive').description(
    'explore the archive of deleted items (config archive.url)',
  );
  const archiveFlag = [
    '--archive <url>',
    'archive root (file:///path or s3://bucket/prefix) instead of archive.url',
  ] as const;

  const ls = new Command('ls')
    .description('list archive data files with their record counts')
    .option('-t, --table <name>', 'only this table')
    .option(
      '--from <iso>',
      'deletion time from (inclusive; with --table)',
      argParser((v) => parseInstant(v, '--from')),
    )
    .option(
      '--to <iso>',
      'deletion time to (exclusive; with --table)',
      argParser((v) => parseInstant(v, '--to')),
    )
    .option(...archiveFlag)
    .addOption(jsonOption())
    .action(
      action<{ table?: string; from?: number; to?: number; json?: boolean }>(
        env,
        async (ctx, opts) => {
          const range = rangeOf(opts);
          if (range && opts.table === undefined) throw new ValidationError('--from/--to need --table');
          const files = await listArchiveFiles(openStorage(ctx), {
            ...(opts.table ? { table: opts.table } : {}),
            range,
          });
          if (opts.json) return printJson(ctx.io, files);
          if (files.length === 0) {
            ctx.io.stdout.write(
              `no archive files under ${ctx.config.archive.url}${opts.table ? ` for ${opts.table}` : ''}\n`,
            );
            return;
          }
          const n = (v: number | null): string => (v === null ? '?' : String(v));
          ctx.io.stdout.write(
            renderTable(
              ['TABLE', 'HOUR (UTC)', 'PARTITION', 'OFFSETS', 'REMOVES', 'RETRACTIONS', 'FILE'],
              files.map((f) => [
                f.table,
                f.hour,
                String(f.partition),
                `${f.firstOffset}-${f.lastOffset}`,
                n(f.removes),
                n(f.retractions),
                f.path,
              ]),
            ),
          );
          const total = files.reduce((a, f) => a + (f.removes ?? 0), 0);
          ctx.io.stdout.write(
            `${files.length} file(s), ${total} REMOVE record(s) under ${ctx.config.archive.url}\n`,
          );
        },
        { overrides: archiveOverrides },
      ),
    );
  example(
    ls,
    'ttlstream archive ls',
    'ttlstream archive ls --table orders --from 2024-05-01T00:00:00Z --to 2024-05-02T00:00:00Z --json',
  );
  archive.addCommand(ls);

  const show = new Command('show')
    .description(
      'print archived records: of one data file, or of a table (optionally one key, a key prefix, a time window)',
    )
    .argument('[file]', 'a data file path as listed by `archive ls`')
    .option('-t, --table <name>', 'records of this table (through the key indexes)')
    .option('--key <json>', 'with --table: one item key as DynamoDB JSON, e.g. \'{"pk":{"S":"order#1"}}\'')
    .option('--key-prefix <prefix>', 'with --table: hash-key values starting with this')
    .option(
      '--from <iso>',
      'with --table: deletion time from (inclusive)',
      argParser((v) => parseInstant(v, '--from')),
    )
    .option(
      '--to <iso>',
      'with --table: deletion time to (exclusive)',
      argParser((v) => parseInstant(v, '--to')),
    )
    .option('--limit <n>', 'print at most this many records', argParser(positiveInt), 1000)
    .option(...archiveFlag)
    .addOption(jsonOption())
    .action(
      action<ShowFlags>(
        env,
        async (ctx, opts, command) => {
          const file = command.args[0];
          if ((file === undefined) === (opts.table === undefined)) {
            throw new ValidationError('give either a file or --table');
          }
          if (
            file !== undefined &&
            (opts.key || opts.keyPrefix || opts.from !== undefined || opts.to !== undefined)
          ) {
            throw new ValidationError(
              '--key, --key-prefix, --from and --to go with --table, not with a file',
            );
          }
          if (opts.key !== undefined && opts.keyPrefix !== undefined) {
            throw new ValidationError('--key and --key-prefix cannot be used together');
          }
          const storage = openStorage(ctx);
          const rows =
            file !== undefined ? await recordsOfFile(storage, file) : await recordsOfTable(storage, opts);
          const shown = rows.slice(0, opts.limit);
          if (opts.json) return printJson(ctx.io, shown.map(archivedToJson));
          const s = style(useColour(ctx.io));
          for (const row of shown) ctx.io.stdout.write(describeRow(row, s) + '\n');
          const more =
            rows.length > shown.length ? ` (${rows.length - shown.length} more; raise --limit)` : '';
          ctx.io.stdout.write(s.dim(`${shown.length} record(s)${more}`) + '\n');
        },
        { overrides: archiveOverrides },
      ),
    );
  example(
    show,
    'ttlstream archive show table=orders/date=2024-05-01/hour=12/ttlstream.remove+3+00000000000000000100-00000000000000000180.avro',
    'ttlstream archive show --table orders --key \'{"id":{"S":"o-1"}}\' --json',
    'ttlstream archive show --table orders --from 2024-05-01T00:00:00Z --to 2024-05-01T06:00:00Z',
  );
  archive.addCommand(show);
  return archive;
}
