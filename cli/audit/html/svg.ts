/** Inline SVG bar charts for the HTML audit report: no script, no font, no request; prints as vectors. */

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export interface BarChart {
  /** What the chart shows, for screen readers and the figure's title. */
  title: string;
  counts: number[];
  /** Labels under the x axis, at a position in bars (0 = left edge of the first bar). */
  ticks: Array<{ at: number; label: string }>;
  /** A vertical line, at a position in bars, with its label (the SLA). */
  line?: { at: number; label: string };
}

const W = 680;
const H = 220;
const LEFT = 48;
const RIGHT = 34;
const TOP = 14;
const BOTTOM = 34;

const num = (n: number): string => String(Math.round(n * 10) / 10);

/** A bar chart as an `<svg>` element; the y axis from 0 to the largest count. */
export function barChartSvg(c: BarChart): string {
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const n = Math.max(1, c.counts.length);
  const max = Math.max(1, ...c.counts);
  const barW = plotW / n;
  const y = (v: number): number => TOP + plotH - (v / max) * plotH;
  const x = (at: number): number => LEFT + at * barW;
  const parts: string[] = [];
  for (const f of [0, 0.5, 1]) {
    const v = Math.round(max * f);
    parts.push(
      `<line class="grid" x1="${LEFT}" x2="${W - RIGHT}" y1="${num(y(v))}" y2="${num(y(v))}"/>`,
      `<text class="ylabel" x="${LEFT - 4}" y="${num(y(v) + 3)}">${v}</text>`,
    );
  }
  c.counts.forEach((v, i) => {
    if (v <= 0) return;
    const h = (v / max) * plotH;
    parts.push(
      `<rect class="bar" x="${num(x(i) + barW * 0.08)}" y="${num(TOP + plotH - h)}" width="${num(barW * 0.84)}" height="${num(h)}"><title>${v}</title></rect>`,
    );
  });
  parts.push(`<line class="axis" x1="${LEFT}" x2="${W - RIGHT}" y1="${TOP + plotH}" y2="${TOP + plotH}"/>`);
  for (const t of c.ticks)
    parts.push(
      `<line class="axis" x1="${num(x(t.at))}" x2="${num(x(t.at))}" y1="${TOP + plotH}" y2="${TOP + plotH + 4}"/>`,
      `<text class="xlabel" x="${num(x(t.at))}" y="${TOP + plotH + 16}">${escapeHtml(t.label)}</text>`,
    );
  if (c.line) {
    const lx = num(x(c.line.at));
    parts.push(
      `<line class="sla" x1="${lx}" x2="${lx}" y1="${TOP - 4}" y2="${TOP + plotH}"/>`,
      `<text class="slalabel" x="${num(x(c.line.at) + 4)}" y="${TOP + 6}">${escapeHtml(c.line.label)}</text>`,
    );
  }
  return (
    `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(c.title)}">` + parts.join('') + '</svg>'
  );
}

/** About `want` tick positions over `n` bars: every k-th bar boundary, k a whole number. */
export function tickPositions(n: number, want = 6): number[] {
  const step = Math.max(1, Math.ceil(n / want));
  const out: number[] = [];
  for (let at = 0; at <= n; at += step) out.push(at);
  return out;
}
