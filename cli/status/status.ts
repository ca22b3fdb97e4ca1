import { Command, Option } from 'commander';
import { EXIT } from '../kit/exit-codes';
import { ValidationError } from '../../core/errors';
import type { CliContext } from '../kit/context';
import { action, argParser, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { printJson, renderTable } from '../kit/io';

export function statusCommand(env: CommandEnv): Command {
  const status = new Command('status')
    .description(
      "per table with TTL settings: TTL state, mode, attribute, expiry index, guard and deleter (control table, read-only), and from a running `ttlstream run`'s /metrics: last pass (and, when its scans fail, the last failure), backlog of marks, deletion lag, archive lag, the streams role's lag, stream problems and losses",
    )
    .addOption(
      new Option(
        '--metrics-url <url...>',
        '/metrics of the running process(es); several for scaled-out roles (default: metrics.port, else api.host:api.port)',
      ),
    )
    .addOption(
      new Option('--metrics-timeout <ms>', 'how long to wait for each /metrics').default(3000).argParser(
        argParser((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n <= 0)
            throw new ValidationError('expected a positive number of milliseconds');
          return n;
        }),
      ),
    )
    .addOption(jsonOption())
    .action(action<{ metricsUrl?: string[]; metricsTimeout: number; json?: boolean }>(env, printStatus));
  return example(
    status,
    'ttlstream status',
    'ttlstream status --metrics-url http://scanner-1:9464/metrics http://archiver-1:9464/metrics --json',
  );
}

/** `status`'s action: the tables' state and the processes' metrics in one report. */
async function printStatus(
  ctx: CliContext,
  opts: { metricsUrl?: string[]; metricsTimeout: number; json?: boolean },
): Promise<number | void> {
  const { assembleStatus, failureLines, sourceLines, statusRows, streamNotes } = await import('./report');
  const { defaultMetricsUrl, readTableFacts, scrapeMetrics } = await import('./status-io');
  const urls =
    opts.metricsUrl && opts.metricsUrl.length > 0 ? opts.metricsUrl : [defaultMetricsUrl(ctx.config)];
  const [facts, scrapes] = await Promise.all([
    readTableFacts(ctx),
    Promise.all(urls.map((u) => scrapeMetrics(u, opts.metricsTimeout))),
  ]);
  const report = assembleStatus(facts, scrapes, Date.now());
  if (opts.json) printJson(ctx.io, report);
  else {
    const { headers, rows } = statusRows(report);
    ctx.io.stdout.write(rows.length > 0 ? renderTable(headers, rows) : 'no table has TTL settings\n');
    for (const line of [...failureLines(report), ...streamNotes(report), ...sourceLines(report)])
      ctx.io.stdout.write(line + '\n');
  }
  // The control-table part is shown either way; a process that did not answer is not "all is well".
  return report.sources.every((s) => s.answered) ? EXIT.ok : EXIT.failure;
}
