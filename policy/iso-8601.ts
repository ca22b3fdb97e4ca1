import { decimalToNumber, parseDecimal } from './decimal';

// Calendar date, optionally a time with optional fraction and offset: 2021-05-18, 2021-05-18T10:00Z,
// 2021-05-18T10:00:00.000+02:00. Week dates, ordinal dates and 24:00 are not accepted.
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * Milliseconds since the epoch of an ISO-8601 date or date-time, or undefined when the text is not
 * one (or names an impossible date such as February 30). A date-time without an offset is UTC, as
 * MongoDB's ISODate() reads it; this keeps the result independent of the host's time zone.
 */
export function parseIso8601(text: string): number | undefined {
  const m = ISO_8601.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((part) =>
    part === undefined ? 0 : Number(part),
  ) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;

  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0..99 to 1900..1999.
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  date.setUTCHours(hour, minute, second, 0);

  const fraction = m[7] === undefined ? undefined : parseDecimal(`0.${m[7]}`);
  const fractionMs = fraction ? decimalToNumber(fraction, 3) : 0;
  const offsetMs = offsetMillis(m[8]);
  if (offsetMs === undefined) return undefined;
  return date.getTime() + fractionMs - offsetMs;
}

function offsetMillis(offset: string | undefined): number | undefined {
  if (offset === undefined || offset === 'Z') return 0;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (hours > 23 || minutes > 59) return undefined;
  return sign * (hours * 60 + minutes) * 60_000;
}
