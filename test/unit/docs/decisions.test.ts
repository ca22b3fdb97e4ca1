import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
const DIR = join(ROOT, 'docs', 'decisions');

/** The one form a record's status takes: no date, no issue, no second value. */
const STATUS = /^(proposed|accepted|built|superseded by \d{4})$/;

/** A record's status line: the first line after its title that is not blank must be `**Status:** <status>`. */
function statusOf(text: string): string | undefined {
  const [, ...rest] = text.split('\n');
  const line = rest.find((l) => l.trim() !== '');
  return /^\*\*Status:\*\* (.*)$/.exec(line ?? '')?.[1];
}

/** The index's rows: record file → the status its row gives. */
function indexRows(index: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of index.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const file = /^\[\d{4}\]\(([^)]+\.md)\)$/.exec(cells[1] ?? '')?.[1];
    if (file !== undefined) rows.set(file, cells[3] ?? '');
  }
  return rows;
}

describe('decision records: one status form, one index', () => {
  const records = readdirSync(DIR).filter((f) => /^\d{4}-.*\.md$/.test(f));
  const index = readFileSync(join(DIR, 'README.md'), 'utf8');

  it('every record starts with a Status line of proposed, accepted, built or superseded by NNNN', () => {
    const bad = records
      .map((f) => [f, statusOf(readFileSync(join(DIR, f), 'utf8'))] as const)
      .filter(([, status]) => status === undefined || !STATUS.test(status))
      .map(([f, status]) => `${f}: ${status ?? 'no **Status:** line after the title'}`);
    expect(bad).toEqual([]);
  });

  it('docs/decisions/README.md lists every record once, with the status the record gives', () => {
    const rows = indexRows(index);
    const wrong = records
      .map((f) => [f, rows.get(f), statusOf(readFileSync(join(DIR, f), 'utf8'))] as const)
      .filter(([, row, status]) => row !== status)
      .map(([f, row, status]) => `${f}: index ${row ?? 'has no row'}, record ${status ?? '-'}`);
    expect(wrong).toEqual([]);
    expect([...rows.keys()].filter((f) => !records.includes(f))).toEqual([]);
  });

  it('ARCHITECTURE.md links to the index instead of keeping a second one', () => {
    const architecture = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    expect(architecture).toContain('(docs/decisions/README.md)');
    expect(indexRows(architecture.replace(/\(docs\/decisions\//g, '('))).toEqual(new Map());
  });

  it('tells a bad status line and a row that disagrees', () => {
    expect(statusOf('# 0001 — x\n\n**Status:** accepted, built (2026-11-30)\n')).toBe(
      'accepted, built (2026-11-30)',
    );
    expect(STATUS.test('accepted, built (2026-11-30)')).toBe(false);
    expect(STATUS.test('superseded by 0031')).toBe(true);
    expect(statusOf('# 0022: x\n\n**Context.** y\n')).toBeUndefined();
    expect(indexRows('| [0002](0002-leases.md) | Leases | accepted, built | leases |\n')).toEqual(
      new Map([['0002-leases.md', 'accepted, built']]),
    );
  });
});
