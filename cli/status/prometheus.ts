import { DataError } from '../../core/errors';
/** One sample of a Prometheus text exposition: `name{label="value",...} value [timestamp]`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

function parseValue(raw: string): number {
  // Case-insensitive, as Prometheus reads them (Go's ParseFloat): prom-client writes NaN as "Nan".
  const word = raw.toLowerCase();
  if (word === '+inf' || word === 'inf') return Infinity;
  if (word === '-inf') return -Infinity;
  if (word === 'nan') return NaN;
  const n = Number(raw);
  if (raw === '' || Number.isNaN(n)) throw new DataError(`not a sample value: "${raw}"`);
  return n;
}

/** `{a="x",b="y\"z"}` from `text[start]` ('{'): the labels and the index after '}'. */
function parseLabels(text: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (text[i] === '}') return { labels, end: i + 1 };
    const name = NAME.exec(text.slice(i))?.[0];
    if (!name) throw new DataError(`bad label name at column ${i + 1}`);
    i += name.length;
    while (text[i] === ' ') i++;
    if (text[i] !== '=' || text[i + 1] !== '"') throw new DataError(`expected ="..." after label ${name}`);
    i += 2;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined) throw new DataError(`unterminated value of label ${name}`);
      i++;
      if (c === '"') break;
      if (c === '\\') {
        const e = text[i++];
        value += e === 'n' ? '\n' : (e ?? '');
      } else value += c;
    }
    labels[name] = value;
  }
}

/**
 * The samples of a Prometheus text exposition (format 0.0.4, what prom-client serves). Comments and
 * blank lines are skipped; a malformed line throws, naming its line number.
 */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      const name = NAME.exec(line)?.[0];
      if (!name) throw new DataError('no metric name');
      let labels: Record<string, string> = {};
      let rest = line.slice(name.length);
      if (rest.startsWith('{')) {
        const parsed = parseLabels(line, name.length);
        labels = parsed.labels;
        rest = line.slice(parsed.end);
      }
      const [value = ''] = rest.trim().split(/\s+/);
      out.push({ name, labels, value: parseValue(value) });
    } catch (err) {
      throw new DataError(`line ${index + 1}: ${(err as Error).message}`);
    }
  });
  return out;
}
