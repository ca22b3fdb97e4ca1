import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { filesUnder } from '../support/files';
import { helperNames, unexplained, writtenTwice } from '../support/helper-names';

const ROOT = resolve(__dirname, '..', '..');

/**
 * Names that several files under test/ define at the top level for things that are not the same helper. Anything
 * else a second file needs goes to test/support/. Each entry says why the definitions differ.
 */
const ALLOWED: Record<string, string> = {
  // What each file's tests start from: a shutdown coordinator, a mark writer on a fake table, a group consumer on
  // stand-in kafkajs consumers, a partition worker that checks its commits, a fault scenario's tables.
  setup: "each file's own test bed",
  // A settings row (ttl-state), an audit report row (audit-html), and the prepared archive rows of three different
  // data sets (verify: two tables 15 min apart; retention: twelve hours apart back from NOW; partition: one table).
  row: "one row of each file's own data set",
  // manifest.test's prepared archive rows of an offset range; container.test's raw rows of an Avro container.
  rows: "each file's own rows, of different types",
  // test/support/ports.ts types the CommonJS originals in test/jest/stacks.cjs, which jest's configuration and test
  // environment load before any TypeScript can be.
  firstTestLane: 'the typed wrapper of test/jest/stacks.cjs',
  testLane: 'the typed wrapper of test/jest/stacks.cjs',
};

function testSources(): Map<string, string> {
  return new Map(
    filesUnder(resolve(ROOT, 'test'))
      .filter((f) => /\.(ts|cjs)$/.test(f))
      .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8')]),
  );
}

describe('test helpers are written once', () => {
  const twice = writtenTwice(testSources());

  it('no helper is defined at the top level of two files under test/: a shared one lives in test/support/', () => {
    expect(unexplained(twice, ALLOWED)).toEqual([]);
  });

  it('the allowlist names only what several files still define', () => {
    expect(Object.keys(ALLOWED).filter((name) => !twice.has(name))).toEqual([]);
  });

  it('finds a helper written twice, whichever way it is written', () => {
    const files = new Map([
      ['a.ts', 'export async function waitFor<T>(what: string) {}\nconst cli = (args: string[]) => args;\n'],
      [
        'b.ts',
        'function waitFor(what) {}\nexport const cli = async (\n  args: string[],\n): Promise<void> => {};\n',
      ],
      [
        'c.ts',
        'const T = (1 + 2);\nconst range = (a: number) => a;\n  function nested() {}\nconst x = f(1);\n',
      ],
    ]);
    expect(helperNames(files.get('c.ts') as string)).toEqual(['range']);
    expect(writtenTwice(files)).toEqual(
      new Map([
        ['waitFor', ['a.ts', 'b.ts']],
        ['cli', ['a.ts', 'b.ts']],
      ]),
    );
  });
});
