import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const ARCHITECTURE = resolve(__dirname, '..', '..', '..', 'ARCHITECTURE.md');

/** A row a reader takes in at a glance; more belongs in a row of its own or in the folder's README. */
const MAX_ROW = 300;

describe('ARCHITECTURE.md stays a map', () => {
  it(`every table row is at most ${MAX_ROW} characters`, () => {
    const long = readFileSync(ARCHITECTURE, 'utf8')
      .split('\n')
      .map((line, i) => ({ line, number: i + 1 }))
      .filter(({ line }) => line.startsWith('|') && line.length > MAX_ROW)
      .map(({ line, number }) => `line ${number}: ${line.length} characters: ${line.slice(0, 60)}…`);
    expect(long).toEqual([]);
  });
});
