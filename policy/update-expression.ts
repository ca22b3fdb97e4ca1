/**
 * Just enough of the UpdateExpression grammar to add one SET assignment and to see which top-level
 * attributes an expression names. Expressions hold no string literals (values are :placeholders) and
 * SET/REMOVE/ADD/DELETE are reserved words, so a keyword can only appear as a clause keyword.
 */

const SET_CLAUSE = /(^|[\s)])(SET)(?=\s)/i;
const CLAUSE_KEYWORDS = new Set(['SET', 'REMOVE', 'ADD', 'DELETE']);

/** Adds `assignment` (e.g. "#lw = :lw") to the SET clause, creating the clause when there is none. */
export function addSetAssignment(expression: string | undefined, assignment: string): string {
  const trimmed = (expression ?? '').trim();
  if (trimmed === '') return `SET ${assignment}`;
  const match = SET_CLAUSE.exec(trimmed);
  if (!match) return `${trimmed} SET ${assignment}`;
  // Put ours first, right after the keyword: the end of the SET clause need not be found.
  const afterKeyword = match.index + (match[1] ?? '').length + 3;
  return `${trimmed.slice(0, afterKeyword)} ${assignment},${trimmed.slice(afterKeyword)}`;
}

/**
 * The top-level attribute names that start a document path in the expression, as names (placeholders
 * resolved through `names`). `a.b[0]` gives `a`; function names and list indexes are skipped.
 */
export function topLevelAttributes(expression: string, names: Record<string, string> = {}): string[] {
  const found: string[] = [];
  for (const match of expression.matchAll(/[#:]?[A-Za-z0-9_]+/g)) {
    const token = match[0];
    const start = match.index;
    if (token.startsWith(':') || /^\d/.test(token)) continue;
    if (previousNonSpace(expression, start) === '.') continue;
    if (nextNonSpace(expression, start + token.length) === '(') continue;
    if (!token.startsWith('#') && CLAUSE_KEYWORDS.has(token.toUpperCase())) continue;
    found.push(token.startsWith('#') ? (names[token] ?? token) : token);
  }
  return found;
}

function previousNonSpace(text: string, index: number): string | undefined {
  for (let i = index - 1; i >= 0; i--) if (!/\s/.test(text.charAt(i))) return text.charAt(i);
  return undefined;
}

function nextNonSpace(text: string, index: number): string | undefined {
  for (let i = index; i < text.length; i++) if (!/\s/.test(text.charAt(i))) return text.charAt(i);
  return undefined;
}
