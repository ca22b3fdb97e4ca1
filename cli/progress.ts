import { SingleBar } from 'cli-progress';
import type { CliIo } from './io';

export interface Progress {
  /** False when the bar is switched off (not a terminal, or JSON output): callers may skip the bookkeeping. */
  readonly active: boolean;
  update(done: number, total?: number): void;
  stop(): void;
}

const silent: Progress = { active: false, update: () => undefined, stop: () => undefined };

/**
 * A progress bar for long work (restore, replay, big previews). Off when stdout is not a terminal
 * or output is JSON, so pipes and scripts get clean output; the bar itself goes to stderr.
 */
export function createProgress(io: CliIo, label: string, options: { json?: boolean } = {}): Progress {
  if (options.json || io.stdout.isTTY !== true || io.stderr.isTTY !== true) return silent;
  const bar = new SingleBar({
    format: `${label} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`,
    stream: io.stderr as NodeJS.WritableStream,
    hideCursor: true,
    clearOnComplete: false,
    noTTYOutput: false,
  });
  let started = false;
  return {
    active: true,
    update(done, total) {
      if (!started) {
        bar.start(total ?? done, done);
        started = true;
        return;
      }
      if (total !== undefined) bar.setTotal(total);
      bar.update(done);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
