/**
 * The duplicate-name guard of test/unit/test-helpers.test.ts (for test/) and test/unit/product-helpers.test.ts (for
 * product code): a helper defined at the top level of two files is one helper written twice, unless its allowlist
 * says why the two are different things.
 */

/** A top-level `function X(` (exported, async or a generator too) or `const X = (...) =>` (or `async (`, `<T>(`). */
const FUNCTION = /^(?:export\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*[<(]/gm;
const ARROW =
  /^(?:export\s+)?const\s+([A-Za-z_$][\w$]*)\s*(?::[^=\n]+)?=\s*(?:async\s*)?(?:<[^>\n]*>\s*)?\(/gm;

/** The index just past the `)` that closes the `(` at `open`. */
function closing(source: string, open: number): number {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === '(') depth++;
    else if (source[i] === ')' && --depth === 0) return i + 1;
  }
  return source.length;
}

/** The names of the helpers `source` defines at the top level, in order. */
export function helperNames(source: string): string[] {
  const found: Array<{ at: number; name: string }> = [];
  for (const m of source.matchAll(FUNCTION)) found.push({ at: m.index, name: m[1] as string });
  for (const m of source.matchAll(ARROW)) {
    // `const X = (` is a helper only if an arrow follows the parameters (perhaps after a return type).
    const after = source.slice(closing(source, m.index + m[0].length - 1));
    if (/^\s*(?::[^=;]*?)?=>/.test(after)) found.push({ at: m.index, name: m[1] as string });
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.name);
}

/** Every helper name defined at the top level of more than one of `files` (path → source), with its files. */
export function writtenTwice(files: Map<string, string>): Map<string, string[]> {
  const where = new Map<string, Set<string>>();
  for (const [path, source] of files)
    for (const name of helperNames(source)) where.set(name, (where.get(name) ?? new Set()).add(path));
  return new Map(
    [...where].filter(([, paths]) => paths.size > 1).map(([name, paths]) => [name, [...paths].sort()]),
  );
}

/** `name: path, path` for each name written twice that `allowed` does not list. */
export function unexplained(twice: Map<string, string[]>, allowed: Record<string, string>): string[] {
  return [...twice]
    .filter(([name]) => !Object.hasOwn(allowed, name))
    .map(([name, paths]) => `${name}: ${paths.join(', ')}`);
}
