import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, posix, relative, resolve } from 'node:path';
import { filesUnder } from '../support/files';

const ROOT = resolve(__dirname, '..', '..');

/**
 * Where tests live and what the files beside them are called.
 *
 * - A unit test mirrors the product folder of what it tests: the test of core/leases.ts is
 *   test/unit/core/leases.test.ts, of archiver/group/slots.ts test/unit/archiver/group/slots.test.ts. A test named
 *   after a module it imports lives in that module's folder (an `index.ts` stands for its folder); any other test
 *   imports a module of its folder, itself or through a test/support/ helper.
 * - An integration suite lives under the top-level product folder it exercises, or under one of the scenario folders
 *   below (suites that cross the roles).
 * - A helper beside suites is named `<what>.support.ts` and serves the suites of its own folder only; a helper that
 *   files of other folders use lives in test/support/ (plain names), the one home of shared helpers.
 */

/** Unit test folders whose product is not modules: the tests read files (manifests, rules, documents). */
const UNIT_FOLDERS_OF_FILES: Record<string, string> = {
  docs: 'docs/ holds documents (the decision records and their index): the tests read them',
  deploy:
    'deploy/ holds manifests, Prometheus rules, a dashboard and a health-check script: the tests read or run files',
};

/** Unit tests at the root of test/unit that check the code tree itself (tests or product), not a product module. */
const UNIT_TESTS_OF_THE_TESTS: Record<string, string> = {
  'test-helpers.test.ts': 'checks that helpers under test/ are written once',
  'product-helpers.test.ts':
    'checks that helpers of product code are written once (its allowlist says which names differ)',
  'test-lanes.test.ts': "checks test/jest/stacks.cjs and test/support/ports.ts, the integration lanes' ports",
  'test-layout.test.ts': 'this check: where tests live and what the files beside them are called',
};

/** Integration folders that are not a product folder: suites that cross the roles, or test the stack they run on. */
const SCENARIO_FOLDERS: Record<string, string> = {
  faults:
    'kills, restarts and network faults across scanner, producer and archiver, checked against ground truth',
  observability: "Prometheus scraping the roles' metrics and evaluating deploy/prometheus's alerting rules",
  scale: 'several pipeline processes sharing one table',
  security: 'every role over secured Kafka listeners (TLS, mutual TLS, SASL)',
  smoke: "the local stack's servers themselves, before any suite relies on them",
};

/** Integration suites at the root of test/integration, with why they have no product folder. */
const INTEGRATION_ROOT_SUITES: Record<string, string> = {
  'lane.test.ts': "checks that each jest worker runs on its own lane's stack",
};

/** Files beside suites that are not TypeScript helpers, with why their name is not `<what>.support.ts`. */
const OTHER_FILES_BESIDE_SUITES: Record<string, string> = {
  'test/integration/schemas/confluent_decode.py':
    "a Python consumer the registry suite runs with the consumers' venv: named as Python modules are",
};

/** Data the suites read (`fixtures/` folders): files of the formats under test, not code. */
const FIXTURES = /(^|\/)fixtures\//;
const SUPPORT_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*\.support\.ts$/;

/** The repository seen as the checks need it: paths relative to the root, with `/`. */
interface Tree {
  /** Product modules (not under test/): `.ts`, `.js`, `.cjs` files. */
  modules: Set<string>;
  /** Product folders (not under test/), with the root as ''. */
  folders: Set<string>;
  /** Files under test/, with their text. */
  tests: Map<string, string>;
}

const IMPORT =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bjest\.mock\s*\(\s*)['"](\.{1,2}\/[^'"]*)['"]/g;

/** The files a specifier names, as module resolution would try them. */
function candidates(path: string): string[] {
  return ['.ts', '.js', '.cjs', '/index.ts', '/index.js'].map((ext) => path + ext).concat(path);
}

/** The relative specifiers of `file`'s `source`, resolved to product modules and files under test/. */
function resolveImports(tree: Tree, file: string, source: string): { product: string[]; test: string[] } {
  const product: string[] = [];
  const test: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const spec = m[1] as string;
    // A specifier in code the test runs in a child process from the root (`require('./cli/program')`) is the
    // root's; any other is the file's.
    for (const base of [dirOf(file), '']) {
      const path = posix.normalize(posix.join(base, spec));
      const found = candidates(path).find((c) => tree.modules.has(c) || tree.tests.has(c));
      if (found === undefined) continue;
      (tree.modules.has(found) ? product : test).push(found);
      break;
    }
  }
  return { product, test };
}

/** A path's folder, with the root as ''. */
function dirOf(path: string): string {
  const dir = posix.dirname(path);
  return dir === '.' ? '' : dir;
}

function isIndex(module: string): boolean {
  return /^index\.[a-z]+$/.test(posix.basename(module));
}

/** The name a module goes by: its file name, or for an `index` module its folder's name. */
function nameOf(module: string): string {
  const base = posix.basename(module).replace(/\.[a-z]+$/, '');
  return isIndex(module) ? posix.basename(dirOf(module)) : base;
}

/** Product modules a test reaches: its own imports, and those of the test/support/ helpers it imports. */
function reached(tree: Tree, file: string): { direct: string[]; all: string[] } {
  const direct = resolveImports(tree, file, tree.tests.get(file) ?? '');
  const all = new Set(direct.product);
  const seen = new Set<string>();
  const queue = direct.test.filter((t) => t.startsWith('test/support/'));
  for (let helper = queue.pop(); helper !== undefined; helper = queue.pop()) {
    if (seen.has(helper)) continue;
    seen.add(helper);
    const next = resolveImports(tree, helper, tree.tests.get(helper) ?? '');
    for (const p of next.product) all.add(p);
    queue.push(...next.test.filter((t) => t.startsWith('test/support/')));
  }
  return { direct: direct.product, all: [...all] };
}

/** Unit tests that do not live where the product they test does, each with where it belongs or why it is wrong. */
function misplacedUnitTests(tree: Tree): string[] {
  const out: string[] = [];
  for (const file of tree.tests.keys()) {
    if (!file.startsWith('test/unit/') || !file.endsWith('.test.ts')) continue;
    const inUnit = file.slice('test/unit/'.length);
    const folder = dirOf(inUnit);
    const name = posix.basename(inUnit).split('.')[0] as string;
    if (folder === '' && Object.hasOwn(UNIT_TESTS_OF_THE_TESTS, inUnit)) continue;
    if (Object.hasOwn(UNIT_FOLDERS_OF_FILES, folder.split('/')[0] as string) && tree.folders.has(folder))
      continue;
    const { direct, all } = reached(tree, file);
    // An index stands for its folder's modules (it re-exports them): a test of archive/storage's layout imports
    // archive/storage.
    const indexed = direct.filter(isIndex).map(dirOf);
    const named = [...tree.modules].filter(
      (m) => nameOf(m) === name && (direct.includes(m) || indexed.includes(dirOf(m))),
    );
    if (named.length > 0) {
      const homes = [...new Set(named.map(dirOf))];
      if (!homes.includes(folder))
        out.push(
          `${file}: tests ${named.join(', ')}: belongs in ${homes.map((h) => posix.join('test/unit', h, posix.basename(inUnit))).join(' or ')}`,
        );
      continue;
    }
    if (!all.some((m) => dirOf(m) === folder))
      out.push(
        `${file}: imports no module of ${folder === '' ? 'the root' : folder + '/'} (it reaches ${[...new Set(all.map(dirOf))].sort().join(', ') || 'none'})`,
      );
  }
  return out.sort();
}

/** Integration suites outside a product folder or a scenario folder. */
function misplacedIntegrationSuites(tree: Tree): string[] {
  const out: string[] = [];
  for (const file of tree.tests.keys()) {
    if (!file.startsWith('test/integration/') || !file.endsWith('.test.ts')) continue;
    const parts = file.slice('test/integration/'.length).split('/');
    if (parts.length === 1) {
      if (!Object.hasOwn(INTEGRATION_ROOT_SUITES, parts[0] as string)) out.push(`${file}: not in a folder`);
      continue;
    }
    const area = parts[0] as string;
    if (!tree.folders.has(area) && !Object.hasOwn(SCENARIO_FOLDERS, area))
      out.push(`${file}: ${area}/ is neither a product folder nor a scenario folder`);
  }
  return out.sort();
}

/** Files beside suites (under test/unit/ or test/integration/, not a suite) that break the helper naming or scope. */
function strayHelpers(tree: Tree): string[] {
  const out: string[] = [];
  const beside = [...tree.tests.keys()].filter(
    (f) => /^test\/(unit|integration)\//.test(f) && !f.endsWith('.test.ts') && !FIXTURES.test(f),
  );
  for (const file of beside) {
    if (Object.hasOwn(OTHER_FILES_BESIDE_SUITES, file)) continue;
    if (!SUPPORT_NAME.test(posix.basename(file))) {
      out.push(`${file}: a helper beside suites is named <what>.support.ts`);
      continue;
    }
    const users = [...tree.tests.keys()].filter(
      (user) => user !== file && resolveImports(tree, user, tree.tests.get(user) ?? '').test.includes(file),
    );
    const elsewhere = users.filter((user) => posix.dirname(user) !== posix.dirname(file));
    if (elsewhere.length > 0)
      out.push(
        `${file}: used from another folder (${elsewhere.join(', ')}): a shared helper lives in test/support/`,
      );
  }
  return out.sort();
}

function repositoryTree(): Tree {
  const modules = new Set<string>();
  const folders = new Set<string>(['']);
  const skip = new Set(['node_modules', 'dist', 'test', 'coverage', '.git', '.ttlstream', 'infra']);
  for (const entry of readdirSync(ROOT)) {
    if (skip.has(entry) || entry.startsWith('.')) continue;
    const path = join(ROOT, entry);
    if (!statSync(path).isDirectory()) {
      if (/\.(ts|js|cjs)$/.test(entry)) modules.add(entry);
      continue;
    }
    for (const file of filesUnder(path)) {
      const rel = relative(ROOT, file).split('\\').join('/');
      for (let dir = posix.dirname(rel); dir !== '.'; dir = posix.dirname(dir)) folders.add(dir);
      if (/\.(ts|js|cjs)$/.test(rel) && !rel.endsWith('.d.ts')) modules.add(rel);
    }
  }
  const tests = new Map<string, string>();
  for (const file of filesUnder(join(ROOT, 'test'))) {
    const rel = relative(ROOT, file).split('\\').join('/');
    tests.set(rel, /\.(ts|cjs|js)$/.test(rel) ? readFileSync(file, 'utf8') : '');
  }
  return { modules, folders, tests };
}

describe('test folders mirror product folders; helpers beside suites have one name and one folder', () => {
  const tree = repositoryTree();

  it('a unit test lives in the folder of the module it tests: test/unit/<folder>/ for <folder>/<module>.ts', () => {
    expect(misplacedUnitTests(tree)).toEqual([]);
  });

  it('an integration suite lives under the product folder it exercises, or a scenario folder', () => {
    expect(misplacedIntegrationSuites(tree)).toEqual([]);
  });

  it('a helper beside suites is <what>.support.ts and serves only its own folder', () => {
    expect(strayHelpers(tree)).toEqual([]);
  });

  it('every allowlisted folder and file still exists', () => {
    const missing = [
      ...Object.keys(UNIT_FOLDERS_OF_FILES).map((f) => `test/unit/${f}`),
      ...Object.keys(UNIT_TESTS_OF_THE_TESTS).map((f) => `test/unit/${f}`),
      ...Object.keys(SCENARIO_FOLDERS).map((f) => `test/integration/${f}`),
      ...Object.keys(INTEGRATION_ROOT_SUITES).map((f) => `test/integration/${f}`),
      ...Object.keys(OTHER_FILES_BESIDE_SUITES),
    ].filter((p) => !existsSync(join(ROOT, p)));
    expect(missing).toEqual([]);
  });

  it('finds a misplaced test, a suite outside any area, a helper misnamed or shared', () => {
    const synthetic: Tree = {
      modules: new Set([
        'core/leases.ts',
        'pipeline/marks.ts',
        'archiver/erase/index.ts',
        'archiver/roll.ts',
      ]),
      folders: new Set(['', 'core', 'pipeline', 'archiver', 'archiver/erase', 'scanner']),
      tests: new Map([
        ['test/unit/scanner/leases.test.ts', "import { x } from '../../../core/leases';"],
        ['test/unit/core/leases.test.ts', "import { x } from '../../../core/leases';"],
        ['test/unit/scanner/marks-format.test.ts', "import { x } from '../../../pipeline/marks';"],
        [
          'test/unit/archiver/erase.test.ts',
          "import { a } from '../../../archiver/erase';\nimport { b } from '../../../archiver/roll';",
        ],
        ['test/unit/archiver/erase/erase.test.ts', "import { a } from '../../../../archiver/erase';"],
        ['test/unit/pipeline/through-support.test.ts', "import { h } from '../../support/marks';"],
        ['test/support/marks.ts', "import { m } from '../../pipeline/marks';"],
        ['test/integration/restore/restore.test.ts', ''],
        ['test/integration/faults/kill.test.ts', "import { s } from './scenario';"],
        ['test/integration/faults/scenario.ts', ''],
        ['test/integration/archiver/suite.support.ts', ''],
        ['test/integration/faults/other.test.ts', "import { s } from '../archiver/suite.support';"],
      ]),
    };
    expect(misplacedUnitTests(synthetic)).toEqual([
      'test/unit/archiver/erase.test.ts: tests archiver/erase/index.ts: belongs in test/unit/archiver/erase/erase.test.ts',
      'test/unit/scanner/leases.test.ts: tests core/leases.ts: belongs in test/unit/core/leases.test.ts',
      'test/unit/scanner/marks-format.test.ts: imports no module of scanner/ (it reaches pipeline)',
    ]);
    expect(misplacedIntegrationSuites(synthetic)).toEqual([
      'test/integration/restore/restore.test.ts: restore/ is neither a product folder nor a scenario folder',
    ]);
    expect(strayHelpers(synthetic)).toEqual([
      'test/integration/archiver/suite.support.ts: used from another folder (test/integration/faults/other.test.ts): a shared helper lives in test/support/',
      'test/integration/faults/scenario.ts: a helper beside suites is named <what>.support.ts',
    ]);
  });
});
