import type { CliIo, OutStream } from './io';
import { constants } from 'node:os';
import { isReaderGone } from '../../core/exit';

/** The conventional exit code of a process stopped by a signal: 128 + its number (SIGINT → 130). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/**
 * SIGINT/SIGTERM during a one-shot command: instead of dying where it stands (cursor hidden, line
 * wrap off, nothing said), the command is told, so it can restore the terminal and say what was done.
 * The reader of `output` leaving (`ttlstream restore … | head -1`: EPIPE, as Node ignores SIGPIPE itself) stops the
 * command the same way, received as SIGPIPE: a command that writes must not go on half seen.
 */
export function watchSignals(
  signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'],
  output?: OutStream,
): {
  received: Promise<NodeJS.Signals>;
  dispose(): void;
} {
  let onSignal: (s: NodeJS.Signals) => void = () => undefined;
  const received = new Promise<NodeJS.Signals>((resolve) => (onSignal = resolve));
  const listeners = signals.map((s) => {
    const l = (): void => onSignal(s);
    process.on(s, l);
    return [s, l] as const;
  });
  const onOutputError = (err: Error): void => {
    if (isReaderGone(err)) onSignal('SIGPIPE');
  };
  output?.on?.('error', onOutputError);
  return {
    received,
    dispose() {
      for (const [s, l] of listeners) process.off(s, l);
      output?.off?.('error', onOutputError);
    },
  };
}

export interface InterruptSummary {
  command: string;
  signal: NodeJS.Signals;
  done: number;
  total: number | undefined;
  unit: string;
  /** What happened to the `done` ones. */
  did: string;
  /** Whether and why running the same command again is safe. */
  rerun: string;
  /** False for a read-only run (a dry run, an audit): when its reader leaves, it ends without a word. */
  writes: boolean;
}

/**
 * What an interrupted long command tells the operator: how far it got, and whether to run it again. On stdout, where
 * a script reads the command's output; on stderr when stdout's reader has gone, and not at all then for a run that
 * wrote nothing (`audit --csv | head -1` ends quietly).
 */
export function printInterrupted(io: CliIo, json: boolean, s: InterruptSummary): void {
  const readerLeft = s.signal === 'SIGPIPE';
  if (readerLeft && !s.writes) return;
  const out = readerLeft ? io.stderr : io.stdout;
  if (json) {
    out.write(
      JSON.stringify({
        interrupted: s.signal,
        command: s.command,
        done: s.done,
        total: s.total ?? null,
        rerun: s.rerun,
      }) + '\n',
    );
    return;
  }
  const of = s.total === undefined ? '' : ` of ${s.total}`;
  out.write(
    `${s.command} interrupted (${stopCause(s.signal)}) after ${s.done}${of} ${s.unit}(s): ${s.did}\n${s.rerun}\n`,
  );
}

/** The signal as an operator reads it: SIGPIPE here is never a real signal but stdout's reader leaving. */
export function stopCause(signal: NodeJS.Signals): string {
  return signal === 'SIGPIPE' ? 'SIGPIPE: the reader of stdout left' : signal;
}
