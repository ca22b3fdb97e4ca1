import type { CliIo } from './io';
import { constants } from 'node:os';

/** The conventional exit code of a process stopped by a signal: 128 + its number (SIGINT → 130). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/**
 * SIGINT/SIGTERM during a one-shot command: instead of dying where it stands (cursor hidden, line
 * wrap off, nothing said), the command is told, so it can restore the terminal and say what was done.
 */
export function watchSignals(signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): {
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
  return {
    received,
    dispose() {
      for (const [s, l] of listeners) process.off(s, l);
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
}

/** What an interrupted long command tells the operator: how far it got, and whether to run it again. */
export function printInterrupted(io: CliIo, json: boolean, s: InterruptSummary): void {
  if (json) {
    io.stdout.write(
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
  io.stdout.write(
    `${s.command} interrupted (${s.signal}) after ${s.done}${of} ${s.unit}(s): ${s.did}\n${s.rerun}\n`,
  );
}
