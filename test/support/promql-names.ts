import { collectProcessMetrics, registry } from '../../core/metrics';

/** Labels every scraped series has, or that PromQL itself gives (`le` of histogram buckets). */
const SCRAPE_LABELS = new Set(['job', 'instance', 'le']);

/** Every series name ttlstream exposes, each with its label names (a histogram's _bucket, _sum and _count too). */
export function exposedSeries(): Map<string, Set<string>> {
  collectProcessMetrics();
  const out = new Map<string, Set<string>>();
  for (const m of registry.getMetricsAsArray()) {
    const { name, labelNames, constructor } = m as unknown as {
      name: string;
      labelNames?: readonly string[];
      constructor: { name: string };
    };
    const labels = new Set(labelNames ?? []);
    const names =
      constructor.name === 'Histogram' ? ['_bucket', '_sum', '_count'].map((s) => name + s) : [name];
    for (const n of names) out.set(n, labels);
  }
  return out;
}

/**
 * What in a PromQL expression does not exist: ttlstream_* series names ttlstream does not expose, and label names
 * in `by`/`without`/`on`/`ignoring` clauses or selectors that none of the expression's ttlstream series has.
 * Recording rules (`ttlstream:...`) and `up` are taken as given. A check by name, not a parser: the parse is
 * promtool's and Prometheus's job.
 */
export function unknownNames(expr: string, exposed = exposedSeries(), extraLabels: string[] = []): string[] {
  const problems: string[] = [];
  const series = [...new Set(expr.match(/\bttlstream_[a-z0-9_]+/g) ?? [])];
  const labels = new Set<string>([...SCRAPE_LABELS, ...extraLabels]);
  for (const s of series) {
    const known = exposed.get(s);
    if (!known) problems.push(`series ${s}`);
    else for (const l of known) labels.add(l);
  }
  if (series.length === 0) return problems;
  const used = new Set<string>();
  for (const clause of expr.matchAll(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g))
    for (const l of (clause[1] ?? '').split(',')) if (l.trim()) used.add(l.trim());
  for (const selector of expr.matchAll(/\bttlstream_[a-z0-9_]+\{([^}]*)\}/g))
    for (const m of (selector[1] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g))
      used.add(m[1] ?? '');
  for (const l of used) if (!labels.has(l)) problems.push(`label ${l}`);
  return problems;
}
