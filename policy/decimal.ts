import { InternalError } from '../core/errors';
/**
 * Exact handling of DynamoDB Number text. A TTL of "1700000000.123" must expire at exactly
 * 1700000000123 ms, and the read filter sends "now" to the server as decimal text, so both sides
 * must agree on the same decimal value; a naive `Number(text) * 1000` is off by a rounding error.
 */

/** A decimal value as digits × 10^exponent, so scaling by a power of ten is exact. */
export interface Decimal {
  negative: boolean;
  /** Integer digits without leading zeros; '' is zero. */
  digits: string;
  exponent: bigint;
}

// DynamoDB's Number text: optional sign, digits with an optional point, optional exponent. No spaces,
// no hex, no "Infinity" (all of which `Number()` would accept).
const NUMBER_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

export function parseDecimal(text: unknown): Decimal | undefined {
  if (typeof text !== 'string') return undefined;
  const m = NUMBER_TEXT.exec(text);
  if (!m) return undefined;
  const intPart = m[2] ?? '';
  const fracPart = m[3] ?? '';
  if (intPart === '' && fracPart === '') return undefined;
  const digits = (intPart + fracPart).replace(/^0+/, '');
  const exponent = BigInt(m[4] ?? '0') - BigInt(fracPart.length);
  return { negative: m[1] === '-' && digits !== '', digits, exponent };
}

/** The nearest double to value × 10^shift (one correctly rounded conversion, no intermediate rounding). */
export function decimalToNumber(d: Decimal, shift = 0): number {
  if (d.digits === '') return 0;
  return Number(`${d.negative ? '-' : ''}${d.digits}e${(d.exponent + BigInt(shift)).toString()}`);
}

/** value × 10^shift as plain decimal text ("1700000000.123"), the form DynamoDB accepts for N. */
export function decimalToPlainText(d: Decimal, shift = 0): string {
  if (d.digits === '') return '0';
  const sign = d.negative ? '-' : '';
  const e = Number(d.exponent + BigInt(shift));
  if (e >= 0) return sign + d.digits + '0'.repeat(e);
  const padded = d.digits.padStart(-e + 1, '0');
  const intPart = padded.slice(0, padded.length + e);
  const fracPart = padded.slice(padded.length + e).replace(/0+$/, '');
  return sign + intPart + (fracPart ? '.' + fracPart : '');
}

/** A millisecond instant as exact decimal seconds ("1700000000123" → "1700000000.123"). */
export function millisToSecondsText(ms: number): string {
  const d = parseDecimal(String(ms));
  // String() of a finite number is always valid decimal text; this guards the invariant, not input.
  if (!d) throw new InternalError(`not a finite number: ${ms}`);
  return decimalToPlainText(d, -3);
}
