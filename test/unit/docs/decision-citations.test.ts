import { readFileSync, readdirSync } from 'node:fs';
import { extname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
const DIR = join(ROOT, 'docs', 'decisions');

/** Folders that hold no text of ours (dependencies, builds, the local stack's state). */
const SKIP = new Set(['node_modules', 'dist', 'coverage', '.git', '.ttlstream', 'run', 'target']);
const TEXT = new Set(['.ts', '.mjs', '.cjs', '.js', '.md', '.sh', '.yaml', '.yml', '.py', '.json', '']);

function textFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'package-lock.json') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name)) textFiles(path, out);
    } else if (entry.isFile() && TEXT.has(extname(entry.name)) && !entry.name.startsWith('.')) out.push(path);
  }
  return out;
}

/** A decision number as the project writes it: four digits, the first a zero (years are not). */
const NUMBER = String.raw`0\d{3}`;
const LIST = String.raw`${NUMBER}(?:(?:, and |, | and | or )${NUMBER})*`;

/**
 * The ways code and docs cite a decision: its path (with or without the record's file name), a markdown link,
 * "decision 0031" and lists after it ("decisions 0010, 0012 and 0013"), "see 0001", "amends 0004", "pre-0033",
 * and a number alone in parentheses ("(0009)").
 */
const CITATIONS: RegExp[] = [
  new RegExp(String.raw`decisions/(${NUMBER})(-[\w.-]+\.md)?`, 'g'),
  new RegExp(String.raw`\[(${NUMBER})\]\((${NUMBER}-[\w.-]+\.md)\)`, 'g'),
  new RegExp(
    String.raw`\b(?:[Dd]ecisions?|[Dd]ecision records?|[Ss]ee|[Aa]mends|[Aa]mended by|before|pre-) ?(${LIST})\b`,
    'g',
  ),
  new RegExp(String.raw`\((${NUMBER})\)`, 'g'),
];

/** Every decision number (and record file, where one is named) a text cites. */
function citations(text: string): Array<{ number: string; file?: string }> {
  // The index's own prose names the next number to take, which by definition has no record yet.
  const prose = text.replace(/next free number \(\d{4}\)/g, '');
  const found: Array<{ number: string; file?: string }> = [];
  for (const pattern of CITATIONS)
    for (const m of prose.matchAll(pattern)) {
      const file = m[2]?.endsWith('.md') ? m[2].replace(/^-/, `${m[1]}-`) : undefined;
      for (const number of (m[1] ?? '').match(new RegExp(NUMBER, 'g')) ?? [])
        found.push(file === undefined ? { number } : { number, file });
    }
  return found;
}

describe('decision citations', () => {
  const records = readdirSync(DIR).filter((f) => /^\d{4}-.*\.md$/.test(f));
  const numbers = new Set(records.map((f) => f.slice(0, 4)));

  it('every decision cited in code and docs exists, under the file name it is cited by', () => {
    const wrong: string[] = [];
    for (const path of textFiles(ROOT)) {
      const text = readFileSync(path, 'utf8');
      for (const c of citations(text)) {
        if (!numbers.has(c.number))
          wrong.push(`${relative(ROOT, path)}: decision ${c.number} does not exist`);
        else if (c.file !== undefined && !records.includes(c.file))
          wrong.push(`${relative(ROOT, path)}: ${c.file} is not a record's file name`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('finds each form of citation', () => {
    const cited = (text: string) => citations(text).map((c) => c.file ?? c.number);
    expect(cited('Parquet (docs/decisions/0031).')).toEqual(['0031']);
    expect(cited('see docs/decisions/0015-node-24.md')).toEqual(['0015-node-24.md']);
    expect(cited('[0018](docs/decisions/0018-local-stack-endpoints.md)')).toEqual([
      '0018-local-stack-endpoints.md',
    ]);
    expect(cited('[0009](0009-event-id-per-decision.md)')).toEqual(['0009-event-id-per-decision.md']);
    expect(cited('decisions 0010, 0012 and 0013')).toEqual(['0010', '0012', '0013']);
    expect(cited('decision 0025; See 0001, amends 0004, the pre-0033 place (0009)')).toEqual([
      '0025',
      '0001',
      '0004',
      '0033',
      '0009',
    ]);
    expect(cited('in 2026 (2026), before 2027, version 0.0005, next free number (0034)')).toEqual([]);
  });
});

/** An issue cited by number: "issue 13", "Issue #4", "issues 13 and 22", "(#12)". */
const ISSUE = /\b[Ii]ssues? #?\d+|\(#\d+\)/g;

describe('code and tests say why, not which issue', () => {
  it('no source file under the product, test, bench or scripts folders cites an issue number', () => {
    const cited = textFiles(ROOT)
      // This file's own examples excepted.
      .filter((path) => /\.(ts|mjs|cjs|js|sh)$/.test(path) && path !== __filename)
      .flatMap((path) =>
        [...readFileSync(path, 'utf8').matchAll(ISSUE)].map((m) => `${relative(ROOT, path)}: ${m[0]}`),
      );
    expect(cited).toEqual([]);
  });

  it('finds an issue number however it is written, and not a key like user#1', () => {
    const found = (text: string) => [...text.matchAll(ISSUE)].map((m) => m[0]);
    expect(found('Both modes (issue 13); Issue #4; see (#12).')).toEqual(['issue 13', 'Issue #4', '(#12)']);
    expect(found("keys('user#1'), token#0, the issuer 12")).toEqual([]);
  });
});
