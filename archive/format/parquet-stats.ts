import type { Statistics } from 'hyparquet';
import type { ColumnType, ColumnValue } from './parquet-rows';

/**
 * A column chunk's statistics (min, max, null count; NaN count of a DOUBLE column), over exactly
 * the values written: an erasure's rewrite (keepRows) writes only the kept rows, so no bound can
 * be an erased row's (test/unit/archive-tools/erase/parquet-erase.test.ts). Bounds compare as Parquet orders
 * the physical values: byte arrays as unsigned bytes (a string by its UTF-8 bytes, i.e. by code
 * point), numbers and bigints by value, false before true. hyparquet-writer's footer turns them into
 * bytes (a byte array's bound cut to 16 bytes, as before).
 */

type Bound = NonNullable<ColumnValue>;

/** The statistics as the footer takes them, with the NaN count of a floating-point column. */
export type ChunkStatistics = Statistics & { nan_count?: bigint };

export class ColumnBounds {
  private min: Bound | undefined;
  private max: Bound | undefined;
  private nans = 0;
  private readonly compare: (a: Bound, b: Bound) => number;
  private readonly float: boolean;

  constructor(type: ColumnType) {
    this.float = type === 'DOUBLE';
    this.compare =
      type === 'STRING' || type === 'JSON' || type === 'BYTE_ARRAY' ? compareByteArrays : compareValues;
  }

  add(v: Bound): void {
    if (this.float && Number.isNaN(v)) {
      this.nans += 1; // NaN is no bound (the Parquet spec); it is counted
      return;
    }
    if (this.min === undefined || this.max === undefined) {
      this.min = v;
      this.max = v;
      return;
    }
    // Most columns of a file hold one value, or a few: the same one is no news.
    if (v === this.min || v === this.max) return;
    if (this.compare(v, this.min) < 0) this.min = v;
    else if (this.compare(v, this.max) > 0) this.max = v;
  }

  statistics(nulls: number): ChunkStatistics {
    const out: ChunkStatistics = { null_count: BigInt(nulls) };
    if (this.float) out.nan_count = BigInt(this.nans);
    if (this.min === undefined || this.max === undefined) return out;
    // One zero whatever its sign: min is -0 and max +0 (the Parquet spec). A string as its UTF-8 bytes: the
    // footer's writer would encode it twice, each time with a TextEncoder of its own.
    out.min_value =
      this.min === 0 ? -0 : typeof this.min === 'string' ? Buffer.from(this.min, 'utf8') : this.min;
    out.max_value =
      this.max === 0 ? 0 : typeof this.max === 'string' ? Buffer.from(this.max, 'utf8') : this.max;
    return out;
  }
}

function compareValues(a: Bound, b: Bound): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const isSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdfff;

/** Two byte-array values in unsigned byte order, a string as its UTF-8 bytes (a lone surrogate as U+FFFD). */
export function compareByteArrays(a: Bound, b: Bound): number {
  if (typeof a === 'string' && typeof b === 'string') return compareUtf8(a, b);
  return Buffer.compare(asBytes(a), asBytes(b));
}

function asBytes(v: Bound): Uint8Array {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (v instanceof Uint8Array) return v;
  return Buffer.from(String(v), 'utf8');
}

/**
 * Strings in the order of their UTF-8 bytes, which is code point order: UTF-16 code units order
 * the same up to the first that differs, unless it is a surrogate (a pair sorts after U+E000-U+FFFF).
 */
function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  if (!isSurrogate(x) && !isSurrogate(y)) return x - y;
  // From the start of the pair the difference is in, as bytes.
  const from = i > 0 && isSurrogate(a.charCodeAt(i - 1)) ? i - 1 : i;
  return Buffer.compare(Buffer.from(a.slice(from), 'utf8'), Buffer.from(b.slice(from), 'utf8'));
}
