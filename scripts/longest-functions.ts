// Lists the longest functions, methods and arrow functions in product code (everything but test/, bench/,
// node_modules/, dist/), so "no function over N lines" can be measured rather than asserted.
// Usage: npx tsx scripts/longest-functions.ts [--top 10] [--max 120]
// With --max, exits 1 when any function is longer than that many lines.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = join(__dirname, '..');
const skipped = new Set(['test', 'bench', 'node_modules', 'dist', 'coverage', '.ttlstream', '.git', 'run']);

interface FunctionLength {
  where: string;
  name: string;
  lines: number;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (skipped.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts') && !entry.endsWith('.test.ts'))
      files.push(path);
  }
  return files;
}

function nameOf(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
  if (node.name) return node.name.getText(file);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent)
  ) {
    return parent.name.getText(file);
  }
  return '<anonymous>';
}

function functionsOf(path: string): FunctionLength[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      const start = file.getLineAndCharacterOfPosition(fn.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(fn.getEnd()).line;
      found.push({
        where: `${relative(root, path)}:${start + 1}`,
        name: nameOf(fn, file),
        lines: end - start + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function option(name: string): number | undefined {
  const at = process.argv.indexOf(name);
  if (at < 0) return undefined;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} needs a positive integer`);
  return value;
}

const top = option('--top') ?? 10;
const max = option('--max');
const all = sourceFiles(root)
  .flatMap(functionsOf)
  .sort((a, b) => b.lines - a.lines);
for (const fn of all.slice(0, top)) console.log(`${String(fn.lines).padStart(5)}  ${fn.where}  ${fn.name}`);
if (max !== undefined) {
  const over = all.filter((fn) => fn.lines > max);
  console.log(`${over.length} function(s) over ${max} lines`);
  if (over.length > 0) process.exitCode = 1;
}
