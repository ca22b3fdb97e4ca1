/**
 * `ttlstream audit`'s archive pass beside the raw archive read of the same window, in one run (bench/README.md).
 *
 *   npx tsx bench/audit.ts [--rows 50000] [--roll 2000] [--image-bytes 1000] [--rounds 3] [--only raw|audit|index]
 *
 * Writes a file-system archive of `--rows` REMOVE rows (1 % of them retracted), spread over 10 UTC hours, in rolls of
 * `--roll` rows, through the test fixture's writer (the archiver's layout: data files, key indexes, manifests). Then,
 * `--rounds` times in turn:
 *   1. index: the catalog's key-index rows of the window (no data file opened);
 *   2. raw: the same, plus every data file they name read and decoded (`readArchiveFile`: framing check, Avro,
 *      contract validation), the least any reader of the records pays;
 *   3. audit: `readDeletions` + `classifyDeletion` + `AuditTally` + one JSON line per row (what `audit --json` does
 *      with the archive, minus the write to stdout).
 * The order of the three alternates from round to round; `--only` runs some of them (one per process measures
 * each without the others' heap). Prints the best round of each, rows/s, and audit ÷ raw read. Needs no service:
 * the table pass of `audit` (DynamoDB, rate-limited by `--read-rate`) is not measured here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AuditTally, auditKey, auditRecord, classifyDeletion, readDeletions } from '../archive-tools/audit';
import { openCatalog } from '../archive/catalog';
import { readArchiveFile } from '../archive/reader';
import { FsArchiveStorage } from '../archive/storage';
import type { Item, TableTtlSettings } from '../policy';
import type { ArchivedRecord } from '../schemas';
import { removeRow, retractRow, writeRoll } from '../test/support/archive-fixture';
import { exitAfterOutput } from '../core/exit';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '50000' },
    roll: { type: 'string', default: '2000' },
    'image-bytes': { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
  },
});
const ROWS = Number(values.rows);
const ROLL = Number(values.roll);
const IMAGE_BYTES = Number(values['image-bytes']);
const ROUNDS = Number(values.rounds);
const ONLY = values.only?.split(',');
const TABLE = 'bench_audit';
const SETTINGS: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } };
const START_S = Math.floor(Date.UTC(2025, 4, 1, 0, 0) / 1000);
const SPAN_S = 10 * 3600;

async function seed(storage: FsArchiveStorage): Promise<void> {
  const payload = 'x'.repeat(IMAGE_BYTES);
  let batch: ArchivedRecord[] = [];
  let first = 0n;
  for (let i = 0; i < ROWS; i++) {
    const ttlS = START_S + Math.floor((i / ROWS) * SPAN_S);
    const row = removeRow({
      table: TABLE,
      keys: { pk: { S: `customer#${i}` } },
      image: { expiresAt: { N: String(ttlS) }, payload: { S: payload }, n: { N: String(i) } } as Item,
      deletedAtS: ttlS + 1 + (i % 90),
    });
    batch.push(row);
    if (i % 100 === 0) batch.push(retractRow(row, (ttlS + 100) * 1000));
    if (batch.length >= ROLL || i === ROWS - 1) {
      await writeRoll(storage, batch, { partition: i % 3, first });
      first += BigInt(batch.length);
      batch = [];
    }
  }
}

async function timed(fn: () => Promise<number>): Promise<{ rows: number; ms: number }> {
  const t = process.hrtime.bigint();
  const rows = await fn();
  return { rows, ms: Number(process.hrtime.bigint() - t) / 1e6 };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-audit-'));
  const storage = new FsArchiveStorage(dir);
  const load = [loadavg()[0]];
  try {
    process.stderr.write(`seeding ${ROWS} rows in rolls of ${ROLL} under ${dir}\n`);
    await seed(storage);
    const window = { fromMs: START_S * 1000, toMs: (START_S + SPAN_S) * 1000 };
    const range = { fromMs: window.fromMs - 1000, toMs: window.toMs + 3 * 3_600_000 };
    const phases: Record<string, () => Promise<number>> = {
      index: async () => {
        let n = 0;
        for await (const row of openCatalog(storage).scan(TABLE, range)) if (row.kind === 'remove') n++;
        return n;
      },
      raw: async () => {
        const files = new Set<string>();
        for await (const row of openCatalog(storage).scan(TABLE, range)) files.add(row.file);
        let n = 0;
        for (const f of files)
          for (const r of await readArchiveFile(storage, f)) if (r.kind === 'remove') n++;
        return n;
      },
      audit: async () => {
        const tally = new AuditTally();
        let bytes = 0;
        let n = 0;
        for await (const d of readDeletions(storage, {
          table: TABLE,
          settings: SETTINGS,
          window,
          nowMs: window.toMs,
          keyOf: (keys, canonical) => auditKey(TABLE, keys, { hashKeys: false, canonical }),
        })) {
          n++;
          const row = classifyDeletion(d, window, 60_000);
          if (!row) continue;
          tally.add(row);
          bytes += JSON.stringify(auditRecord(row)).length;
        }
        const s = tally.summary();
        if (s.deletions + s.retracted !== ROWS || bytes === 0) throw new Error('audit missed rows');
        return n;
      },
    };
    const best: Record<string, { rows: number; ms: number }> = {};
    for (let round = 0; round < ROUNDS; round++) {
      // The order alternates: a phase that always ran right after another would inherit its garbage.
      const order = Object.entries(phases);
      if (round % 2 === 1) order.reverse();
      for (const [name, fn] of order.filter(([n]) => !ONLY || ONLY.includes(n))) {
        const r = await timed(fn);
        process.stderr.write(`round ${round + 1} ${name}: ${r.rows} rows in ${r.ms.toFixed(0)} ms\n`);
        if (!best[name] || r.ms < (best[name] as { ms: number }).ms) best[name] = r;
      }
    }
    load.push(loadavg()[0]);
    const rate = (name: string): number => {
      const r = best[name] as { rows: number; ms: number };
      return r.rows / (r.ms / 1000);
    };
    for (const name of Object.keys(best))
      process.stdout.write(`${name.padEnd(12)} ${Math.round(rate(name)).toString().padStart(9)} rows/s\n`);
    const ratio = best.audit && best.raw ? rate('audit') / rate('raw') : null;
    if (ratio !== null) process.stdout.write(`audit ÷ raw read ${ratio.toFixed(2)}\n`);
    process.stdout.write(
      JSON.stringify({
        bench: 'audit',
        rows: ROWS,
        roll: ROLL,
        imageBytes: IMAGE_BYTES,
        rounds: ROUNDS,
        rowsPerSec: Object.fromEntries(Object.keys(best).map((n) => [n, Math.round(rate(n))])),
        auditOverRawRead: ratio === null ? null : Number(ratio.toFixed(3)),
        loadavg: load,
      }) + '\n',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  exitAfterOutput(1);
});
