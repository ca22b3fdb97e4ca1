import { Command } from 'commander';
import { UsageError } from '../kit/exit-codes';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { EXIT } from '../kit/exit-codes';
import { printInterrupted } from '../kit/interrupt';
import { printJson, type OutStream } from '../kit/io';
import { untilInterrupted } from '../kit/progress';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';
import type { EraseResult } from '../../archive-tools/erase';
import type { CliContext } from '../kit/context';

interface EraseFlags {
  table: string;
  key: string[];
  keysFile?: string;
  reason?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `ttlstream archive erase`: remove every archived record of a data subject's keys (docs/compliance.md). */
export function archiveEraseCommand(env: CommandEnv): Command {
  const cmd = new Command('erase')
    .description(
      'erase every archived record of the given item keys: rewrite the files holding them without those rows, and record the erasure (the key digest, never the key) in the erasure ledger, which restore, replay, archive show, audit and the archiver honour from then on',
    )
    .requiredOption('-t, --table <name>', 'the table the keys belong to')
    .option(
      '--key <json>',
      'an item key as DynamoDB JSON, e.g. \'{"pk":{"S":"user#42"}}\', or file://key.json, or - (stdin); repeat for more',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option('--keys-file <path>', 'a file with one DynamoDB-JSON key per line (# comments), or - (stdin)')
    .option('--reason <text>', 'why (recorded in the ledger, e.g. a ticket number); no personal data')
    .option('--dry-run', 'list the files that would be rewritten; write nothing')
    .addOption(archiveOption())
    .addOption(jsonOption())
    .action(action<EraseFlags>(env, erase, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream archive erase --table users --key \'{"pk":{"S":"user#42"}}\' --reason "GDPR request 2026-117" --dry-run',
    'ttlstream archive erase --table users --keys-file subjects.jsonl --reason "DSR batch 12" --json',
  );
}

/** `archive erase`'s action: the keys read and checked, the archive erased (or the plan shown), the outcome said. */
async function erase(ctx: CliContext, opts: EraseFlags): Promise<number> {
  const items = await keysToErase(opts);
  const { openExistingStorage } = await import('../kit/archive-root');
  const { eraseArchive } = await import('../../archive-tools/erase');
  const storage = await openExistingStorage(ctx);
  const progress = ctx.progress('erase', { json: opts.json ?? false });
  ctx.onInterrupt((signal) =>
    printInterrupted(ctx.io, opts.json ?? false, {
      command: 'archive erase',
      signal,
      done: progress.done,
      total: progress.total,
      unit: 'file',
      did: opts.dryRun ? 'nothing was written (dry run)' : 'each one rewritten without the erased rows',
      rerun: opts.dryRun
        ? 'a rerun is safe: a dry run writes nothing'
        : 'the keys are in the erasure ledger already (readers hide them); run the same command again to finish the rewrite: it is idempotent',
      writes: !opts.dryRun,
    }),
  );
  // A stop (Ctrl-C, SIGTERM, stdout's reader gone) also ends the loop between two files (each rewritten whole, or not at all).
  const result = await untilInterrupted(progress, ctx.stopSignal, (signal) =>
    eraseArchive(storage, {
      table: opts.table,
      keys: items,
      reason: opts.reason ?? null,
      actor: ctx.operator,
      dryRun: opts.dryRun ?? false,
      signal,
      onProgress: (done, total) => progress.update(done, total),
      // A compaction of the table hands its lock over between two hours; a dead holder's lapses.
      onWait: (holder) =>
        ctx.io.stderr.write(
          `archive erase: waiting for the archive lock of ${opts.table}, held by ${holder ? `${holder.owner} (${holder.purpose})` : 'another process'}\n`,
        ),
    }),
  );
  if (opts.json) printJson(ctx.io, result);
  else printErased(ctx.io.stdout, result);
  const unfinished =
    result.stopped || result.skippedInProgress.length > 0 || result.rollsInProgress.length > 0;
  return unfinished && !result.dryRun ? EXIT.failure : EXIT.ok;
}

/** The keys of --key and --keys-file, each checked as an item key. */
async function keysToErase(opts: EraseFlags) {
  if (opts.key.includes('-') && opts.keysFile === '-')
    throw new UsageError('--key - and --keys-file - cannot both read stdin');
  const { readEraseKeys } = await import('./erase-keys');
  const keys = readEraseKeys(opts.key, opts.keysFile);
  const { KeySchema } = await import('../../schemas');
  const { ValidationError } = await import('../../core/errors');
  return keys.map((k, i) => {
    const parsed = KeySchema.safeParse(k);
    if (!parsed.success)
      throw new ValidationError(`key ${i + 1}: ${parsed.error.issues[0]?.message ?? 'not an item key'}`);
    return parsed.data;
  });
}

function printErased(out: OutStream, result: EraseResult): void {
  const verb = result.dryRun ? 'would rewrite' : 'rewrote';
  for (const f of result.files)
    out.write(`${verb} ${f.file} (generation ${f.generation}): ${f.rowsRemoved} row(s) removed\n`);
  for (const f of result.skippedInProgress)
    out.write(`not yet: ${f} is in a roll still being written; run erase again once it is complete\n`);
  if (result.rollsInProgress.length > 0)
    out.write(
      `${result.rollsInProgress.length} roll(s) of ${result.table} still being written may hold the keys: run erase again once the archiver has completed them\n`,
    );
  out.write(
    `${result.dryRun ? 'would erase' : 'erased'} ${result.digests.length} key(s) of ${result.table}: ` +
      `${verb} ${result.files.length} file(s), ${result.rowsRemoved} row(s) removed` +
      (result.finished > 0 ? `; finished ${result.finished} file(s) an interrupted run left` : '') +
      (result.stopped ? '; stopped by SIGINT before the end (run it again to go on)' : '') +
      '\n',
  );
  if (!result.dryRun) out.write(`key digest(s): ${result.digests.join(' ')}\n`);
}
