import pino from 'pino';
import type { Logger } from '../../core/logger';

/** A line a capturingLogger wrote, parsed. */
export interface CapturedLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/**
 * A logger whose every line at `level` and above is kept: `lines` parsed as they are written, `text()` as written.
 */
export function capturingLogger(level: pino.LevelWithSilent = 'trace'): {
  logger: Logger;
  lines: CapturedLine[];
  text: () => string;
} {
  const raw: string[] = [];
  const lines: CapturedLine[] = [];
  const logger = pino(
    { level },
    {
      write: (chunk: string) => {
        raw.push(chunk);
        lines.push(JSON.parse(chunk) as CapturedLine);
      },
    },
  );
  return { logger, lines, text: () => raw.join('') };
}
