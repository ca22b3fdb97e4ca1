import { Command, Option } from 'commander';
import { ValidationError } from '../../core/errors';
import type { CliContext } from '../kit/context';
import { action, argParser, example, type CommandEnv } from '../kit/command-kit';
import { csvLine } from '../kit/csv';
import { instantOption } from '../kit/window-flags';
import { printJson, renderTable } from '../kit/io';
import { createProgress } from '../kit/progress';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';

interface QueryFlags {
  table?: string;
  since?: number;
  until?: number;
  json?: boolean;
  csv?: boolean;
  maxStageBytes?: number;
  tempDir?: string;
}

function positiveBytes(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || !Number.isSafeInteger(n))
    throw new ValidationError(`expected a positive number of bytes, got "${text}"`);
  return n;
}

function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** `ttlstream archive query "SQL"`: SQL over the archive (Parquet and Avro files) with DuckDB (archive-tools/query/). Reads only. */
export function archiveQueryCommand(env: CommandEnv): Command {
  const cmd = new Command('query')
    .description(
      'run SQL over the archive with embedded DuckDB: the view `deletions` holds the files of the asked tables and deletion hours, Parquet and Avro (docs/archive-columns.md); never writes to the archive',
    )
    .argument('<sql>', 'the SQL, e.g. "select table_name, count(*) from deletions group by 1"')
    .option('-t, --table <name>', "only this table's files (default every table)")
    .addOption(instantOption('--since', 'only files of deletion hours from (inclusive)'))
    .addOption(instantOption('--until', 'only files of deletion hours before (exclusive)'))
    .option(
      '--max-stage-bytes <n>',
      'bytes of files a query may fetch (s3://) or convert (Avro files, counted as the Parquet files they become) into its temporary directory; Parquet files of a file:// archive are read in place (default 4 GiB)',
      argParser(positiveBytes),
    )
    .option('--temp-dir <dir>', 'where the temporary directory is made (default the OS temp dir)')
    .addOption(archiveOption())
    .addOption(new Option('--json', 'rows as a JSON array of objects').conflicts('csv'))
    .addOption(new Option('--csv', 'rows as CSV with a header line'));
  example(
    cmd,
    'ttlstream archive query "select table_name, date, count(*) from deletions group by all order by all"',
    `ttlstream archive query --table orders --since 2026-11-01T00:00Z "select * from deletions where key_pk = 'customer#42'"`,
  );
  return cmd.action(action<QueryFlags>(env, queryDeletions, { overrides: archiveOverrides }));
}

/** `ttlstream archive ddl`: the CREATE EXTERNAL TABLE for a table's Parquet archive. */
export function archiveDdlCommand(env: CommandEnv): Command {
  const cmd = new Command('ddl')
    .description(
      "print the CREATE EXTERNAL TABLE that lets an engine query a table's Parquet archive in place (Athena with partition projection)",
    )
    .requiredOption('-t, --table <name>', 'the table whose archive to describe')
    .addOption(
      new Option('--engine <engine>', 'SQL engine').choices(['athena', 'spark', 'trino']).default('athena'),
    )
    .option('--name <name>', 'the table name to create (default ttlstream_<table>)')
    .option('--since <date>', 'first date partition projection covers (YYYY-MM-DD)', '2020-01-01')
    .addOption(archiveOption());
  example(
    cmd,
    'ttlstream archive ddl --table orders --engine athena --archive s3://archive-bucket/ttlstream',
    'ttlstream archive ddl --table orders --engine spark --name orders_deleted',
  );
  return cmd.action(
    action<{ table: string; engine: 'athena' | 'spark' | 'trino'; name?: string; since: string }>(
      env,
      printDdl,
      { overrides: archiveOverrides },
    ),
  );
}

/** `archive query`'s action: the files in scope found (and staged where needed), the SQL run over the view `deletions`, the rows printed. */
async function queryDeletions(ctx: CliContext, opts: QueryFlags, command: Command): Promise<number | void> {
  const sql = command.args[0] as string;
  const { openExistingStorage, rangeOf } = await import('../kit/archive-root');
  const { parseArchiveUrl } = await import('../../archive/storage/url');
  const { queryArchive, DEFAULT_MAX_STAGE_BYTES } = await import('../../archive-tools/query/query');
  const storage = await openExistingStorage(ctx);
  const parsed = parseArchiveUrl(ctx.config.archive.url);
  const progress = createProgress(ctx.io, 'fetch', { json: opts.json ?? false });
  const tty = ctx.io.stderr.isTTY === true && !opts.json && !opts.csv;
  let result;
  try {
    result = await queryArchive(storage, parsed.kind === 'fs' ? parsed : { kind: 's3' }, {
      sql,
      ...(opts.table !== undefined ? { table: opts.table } : {}),
      ...(rangeOf({ from: opts.since, to: opts.until })
        ? { range: rangeOf({ from: opts.since, to: opts.until }) }
        : {}),
      maxStageBytes: opts.maxStageBytes ?? DEFAULT_MAX_STAGE_BYTES,
      ...(opts.tempDir !== undefined ? { tempDir: opts.tempDir } : {}),
      onStage: (done, total) => progress.update(done, total),
      onQueryProgress: (percent, seconds) => {
        if (tty && seconds >= 2)
          ctx.io.stderr.write(
            `\r\u001b[2Kquery running ${seconds} s${percent >= 0 ? ` (${percent.toFixed(0)} %)` : ''}`,
          );
      },
    });
  } finally {
    progress.stop();
    if (tty) ctx.io.stderr.write('\r\u001b[2K');
  }
  if (result.convertedAvro > 0)
    ctx.io.stderr.write(
      `note: ${result.convertedAvro} Avro file(s) in scope were read with ttlstream's decoder and staged as Parquet (their expired_at and ttl_mode are null)\n`,
    );
  const { columns, rows } = result;
  if (opts.json)
    return printJson(
      ctx.io,
      rows.map((r) => Object.fromEntries(columns.map((c, i) => [c, r[i] ?? null]))),
    );
  if (opts.csv) {
    ctx.io.stdout.write(csvLine(columns));
    for (const r of rows) ctx.io.stdout.write(csvLine(r.map((v) => (v === null ? null : cellText(v)))));
    return;
  }
  ctx.io.stdout.write(
    renderTable(
      columns,
      rows.map((r) => r.map(cellText)),
    ),
  );
  ctx.io.stdout.write(`${rows.length} row(s) from ${result.files} file(s)\n`);
}

/** `archive ddl`'s action: the CREATE EXTERNAL TABLE of the table's newest Parquet file's columns. */
async function printDdl(
  ctx: CliContext,
  opts: { table: string; engine: 'athena' | 'spark' | 'trino'; name?: string; since: string },
): Promise<number | void> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(opts.since)) throw new ValidationError('--since: expected YYYY-MM-DD');
  const { openExistingStorage } = await import('../kit/archive-root');
  const { openCatalog } = await import('../../archive/catalog');
  const { columnsOfParquet, createTableDdl } = await import('../../archive-tools/query/ddl');
  const { isBesideIndexPath } = await import('../../archive/storage/layout');
  const storage = await openExistingStorage(ctx);
  let newest: string | null = null;
  let besideIndexes = 0;
  for await (const f of openCatalog(storage).listFiles(opts.table)) {
    if (f.path.endsWith('.parquet') && f.indexPath !== null) newest = f.path;
    if (f.path.endsWith('.parquet') && f.indexPath !== null && isBesideIndexPath(f.indexPath))
      besideIndexes += 1;
  }
  if (newest === null)
    throw new ValidationError(
      `archive ddl: no Parquet data file of table ${opts.table} in ${storage.root} (archive.format parquet writes them)`,
    );
  const body = await storage.get(newest);
  if (!body) throw new ValidationError(`${newest}: listed but gone`);
  ctx.io.stdout.write(
    createTableDdl(columnsOfParquet(body), {
      engine: opts.engine,
      table: opts.table,
      location: ctx.config.archive.url,
      since: opts.since,
      besideIndexes,
      ...(opts.name !== undefined ? { name: opts.name } : {}),
    }),
  );
  if (besideIndexes > 0 && opts.engine !== 'spark')
    ctx.io.stderr.write(
      `ttlstream: warning: ${besideIndexes} Parquet file(s) of ${opts.table} still have their key index beside them (written before the _index/ layout); ${opts.engine} reads those as data and fails: run \`ttlstream archive move-indexes --table ${opts.table}\` first\n`,
    );
}
