/**
 * The visible text of the element of an audit HTML page (as written, or as a browser's --dump-dom gives it back)
 * that carries data-figure="name": tags removed, entities of the report's own escaping decoded.
 */
export function figureText(html: string, name: string): string {
  const m = new RegExp(`data-figure="${name}"[^>]*>(.*?)</(?:td|span|strong|code|p)>`, 's').exec(html);
  if (!m) throw new Error(`the page has no data-figure="${name}"`);
  return decode((m[1] ?? '').replace(/<[^>]+>/g, '')).trim();
}

/** The text of the first cell of each body row of the table with data-table="name". */
export function tableKeys(html: string, name: string): string[] {
  const table = new RegExp(`<table[^>]*data-table="${name}"[^>]*>(.*?)</table>`, 's').exec(html)?.[1];
  if (table === undefined) return [];
  const body = /<tbody>(.*?)<\/tbody>/s.exec(table)?.[1] ?? '';
  return [...body.matchAll(/<tr[^>]*>\s*<td[^>]*>(.*?)<\/td>/gs)].map((m) => decode(m[1] ?? ''));
}

function decode(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}
