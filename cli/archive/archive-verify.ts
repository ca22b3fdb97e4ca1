import { Command } from 'commander';
import type { CliContext } from '../kit/context';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { EXIT } from '../kit/exit-codes';
import { printJson, renderTable } from '../kit/io';
import { createProgress } from '../kit/progress';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';
import { fromOption, toOption } from '../kit/window-flags';

interface VerifyFlags {
  table?: string;
  from?: number;
  to?: number;
  json?: boolean;
}

/** `ttlstream archive verify`: the tamper-evidence check (docs/compliance.md). Reads only. */
export function archiveVerifyCommand(env: CommandEnv): Command {
  const cmd = new Command('verify')
    .description(
      "check the archive against what the archiver sealed: every partition's manifest hash chain, each data file's and key index's SHA-256; exits 1 on any finding",
    )
    .option('-t, --table <name>', "only this table's files (chains are always checked whole)")
    .addOption(fromOption('only files of deletion hours from (inclusive)'))
    .addOption(toOption('only files of deletion hours before (exclusive)'))
    .addOption(archiveOption())
    .addOption(jsonOption())
    .action(action<VerifyFlags>(env, verify, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream archive verify',
    'ttlstream archive verify --table orders --from 2026-03-01T00:00Z --to 2026-04-01T00:00Z --json',
  );
}

/** `archive verify`'s action: the archive's seals and hash chains checked, the findings reported. */
async function verify(ctx: CliContext, opts: VerifyFlags): Promise<number | void> {
  const { openStorage } = await import('./files');
  const { rangeOf } = await import('../kit/archive-root');
  const { verifyArchive } = await import('../../archive-tools/verify');
  const range = rangeOf(opts);
  const progress = createProgress(ctx.io, 'verify', { json: opts.json ?? false });
  const started = Date.now();
  let report;
  try {
    report = await verifyArchive(openStorage(ctx), {
      ...(opts.table !== undefined ? { table: opts.table } : {}),
      ...(range ?? {}),
      onProgress: (done, total) => progress.update(done, total),
    });
  } finally {
    progress.stop();
  }
  const seconds = (Date.now() - started) / 1000;
  const code = report.findings.length > 0 ? EXIT.failure : EXIT.ok;
  if (opts.json) {
    printJson(ctx.io, { ok: code === EXIT.ok, seconds, ...report });
    return code;
  }
  const out = ctx.io.stdout;
  if (report.findings.length > 0)
    out.write(
      renderTable(
        ['FINDING', 'PATH', 'DETAIL'],
        report.findings.map((f) => [f.kind, f.path, f.detail]),
      ),
    );
  out.write(
    `${report.partitions} partition chain(s), ${report.manifests} manifest(s), ${report.files} file(s) ` +
      `with ${report.rows} row(s) checked in ${seconds.toFixed(1)} s` +
      (report.legacy > 0 ? `; ${report.legacy} manifest(s) from before sealing (not provable)` : '') +
      (report.inProgress.length > 0 ? `; ${report.inProgress.length} roll(s) in progress` : '') +
      (report.erased > 0
        ? `; ${report.erased} file(s) rewritten by erasures, checked at their newest generation`
        : '') +
      (report.eraseInProgress.length > 0
        ? `; ${report.eraseInProgress.length} erasure(s) in progress (run archive erase again to finish)`
        : '') +
      (report.indexesBeside > 0
        ? `; ${report.indexesBeside} key index(es) beside their data files (Athena and Trino read them as data: archive move-indexes)`
        : '') +
      '\n',
  );
  out.write(
    report.findings.length === 0
      ? 'archive verified: no finding\n'
      : `${report.findings.length} finding(s): the archive differs from what was sealed\n`,
  );
  return code;
}
