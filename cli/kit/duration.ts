import { ValidationError } from '../../core/errors';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Durations as operators type them: `30s`, `15m`, `1h`, `2d`, `500ms`, or a compound such as `1h30m`.
 * A bare number is refused on purpose: "30" could mean seconds or milliseconds, and guessing wrong
 * in a TTL tool deletes or keeps the wrong items.
 */
export function parseDuration(text: string): number {
  const input = text.trim();
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
  let total = 0;
  let pos = 0;
  while (pos < input.length) {
    part.lastIndex = pos;
    const match = part.exec(input);
    if (!match) break;
    total += Number(match[1]) * (UNIT_MS[match[2] as string] as number);
    pos = part.lastIndex;
  }
  if (input.length === 0 || pos !== input.length) {
    throw new ValidationError(`invalid duration "${text}": use a number with a unit, e.g. 30s, 15m, 1h, 2d`);
  }
  if (!Number.isSafeInteger(Math.round(total))) throw new ValidationError(`duration "${text}" is too large`);
  return Math.round(total);
}

/** The inverse, for messages: 90000 → "1m30s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let rest = Math.round(ms / 1000);
  const out: string[] = [];
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      out.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return out.join('');
}

/**
 * ISO-8601 timestamps for --from/--to. Without a zone they are UTC (a date alone is midnight UTC):
 * the archive is laid out in UTC, and an operator's local zone must not shift a restore window.
 */
export function parseInstant(text: string, flag: string): number {
  const iso = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
  const trimmed = text.trim();
  const zoneless = /[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(trimmed);
  const ms = Date.parse(zoneless ? `${trimmed}Z` : trimmed);
  if (!iso.test(trimmed) || Number.isNaN(ms)) {
    throw new ValidationError(
      `${flag}: expected an ISO-8601 time such as 2024-05-01T12:00:00Z, got "${text}"`,
    );
  }
  return ms;
}

/**
 * `parseInstant`, or whole epoch seconds (`1714564800`), as a compliance job computes its window. Thirteen digits
 * and more are refused: epoch milliseconds read as seconds would be a window thousands of years away.
 */
export function parseInstantOrEpoch(text: string, flag: string): number {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    if (trimmed.length > 11)
      throw new ValidationError(
        `${flag}: "${text}" looks like epoch milliseconds; give epoch seconds or an ISO-8601 time`,
      );
    return Number(trimmed) * 1000;
  }
  return parseInstant(text, flag);
}
