/** Where a command writes. Injected so tests run the real program in-process and read what it printed. */
export interface OutStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
  /** A process stream's errors: EPIPE when the reader of a pipe has gone (`| head -1`). */
  on?(event: 'error', listener: (err: Error) => void): unknown;
  off?(event: 'error', listener: (err: Error) => void): unknown;
}

export interface CliIo {
  stdout: OutStream;
  stderr: OutStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org) or TERM=dumb. */
export function useColour(io: CliIo, stream: OutStream = io.stdout): boolean {
  if (io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== '') return false;
  if (io.env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

const sgr =
  (open: number, close: number) =>
  (s: string): string =>
    `\u001b[${open}m${s}\u001b[${close}m`;
const plain = (s: string): string => s;

export function style(enabled: boolean): Style {
  return enabled
    ? {
        bold: sgr(1, 22),
        dim: sgr(2, 22),
        red: sgr(31, 39),
        green: sgr(32, 39),
        yellow: sgr(33, 39),
        cyan: sgr(36, 39),
      }
    : { bold: plain, dim: plain, red: plain, green: plain, yellow: plain, cyan: plain };
}

export function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function printLine(io: CliIo, line = ''): void {
  io.stdout.write(line + '\n');
}

/** Visible width: colour codes take no room on screen. */
function visibleLength(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\u001b\[[0-9;]*m/g, '').length;
}

/** A plain aligned table; widths from the content so it reads well in a terminal and in a log. */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => visibleLength(r[i] ?? ''))));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) =>
        i === cells.length - 1 ? c : c + ' '.repeat(Math.max(0, (widths[i] ?? 0) - visibleLength(c))),
      )
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}
