import type { SingleBar } from 'cli-progress';
import type { CliIo } from './io';

/** cli-progress loads when a bar is drawn (a terminal), not with every command that could draw one. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const cliProgress = (): typeof import('cli-progress') => require('cli-progress');

export interface Progress {
  /** False when the bar is switched off (not a terminal, or JSON output): callers may skip the bookkeeping. */
  readonly active: boolean;
  /** The last counts given, for a summary when the work is interrupted. */
  readonly done: number;
  readonly total: number | undefined;
  update(done: number, total?: number): void;
  /** Writes a log line above the bar instead of into it; the bar is drawn again below it. */
  log(line: string): void;
  /** Idempotent: restores the cursor and line wrap the bar switched off. */
  stop(): void;
}

/** Erase the line the bar is drawn on, so a log line starts clean. */
const CLEAR_LINE = '\r\u001b[2K';

function silent(io: CliIo): Progress {
  const p = {
    active: false,
    done: 0,
    total: undefined as number | undefined,
    update(done: number, total?: number) {
      p.done = done;
      if (total !== undefined) p.total = total;
    },
    log: (line: string) => void io.stderr.write(line),
    stop: () => undefined,
  };
  return p;
}

/**
 * A progress bar for long work (restore, replay, big previews). Off when stdout is not a terminal
 * or output is JSON, so pipes and scripts get clean output; the bar itself goes to stderr.
 */
export function createProgress(io: CliIo, label: string, options: { json?: boolean } = {}): Progress {
  if (options.json || io.stdout.isTTY !== true || io.stderr.isTTY !== true) return silent(io);
  const bar = new (cliProgress().SingleBar)({
    format: `${label} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`,
    stream: io.stderr as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: false,
    noTTYOutput: false,
    // A log line written above the bar erased its line: it must be drawn again even if nothing changed.
    forceRedraw: true,
  });
  let started = false;
  let stopped = false;
  const p = {
    active: true,
    done: 0,
    total: undefined as number | undefined,
    update(done: number, total?: number) {
      p.done = done;
      if (total !== undefined) p.total = total;
      if (stopped) return;
      if (!started) {
        bar.start(total ?? done, done);
        started = true;
        return;
      }
      if (total !== undefined) bar.setTotal(total);
      bar.update(done);
    },
    log(line: string) {
      if (!started || stopped) return void io.stderr.write(line);
      io.stderr.write(CLEAR_LINE + line);
      // Draw the bar again at once on the fresh line, not at its next tick; render() is public in
      // cli-progress but missing from its type declarations.
      (bar as SingleBar & { render(): void }).render();
    },
    stop() {
      if (started && !stopped) bar.stop();
      stopped = true;
    },
  };
  return p;
}

/**
 * Runs `work` with the command's stop signal (`ctx.stopSignal`: Ctrl-C, SIGTERM, or stdout's reader gone), so a loop
 * over files or indexes stops between two of them (each done whole, or not at all), and stops `progress` however the
 * work ends.
 */
export async function untilInterrupted<T>(
  progress: Progress,
  stop: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  try {
    return await work(stop);
  } finally {
    progress.stop();
  }
}
