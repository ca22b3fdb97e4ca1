import { InternalError } from '../../core/errors';
import type { ColumnValue } from './parquet-rows';

/**
 * One page's values in Parquet's PLAIN encoding, written straight into one growing buffer (no
 * array per value, no slice per page): byte arrays as a 4-byte length and the bytes, integers and
 * doubles little-endian, booleans bit-packed from the low bit. Reused page after page; a page's
 * bytes (`view`) are valid until the next `reset`.
 */
export class PageValues {
  private bytes = Buffer.allocUnsafeSlow(256 * 1024);
  /** Bytes written. */
  at = 0;
  /** Booleans not yet in a whole byte, and the bit the next one takes. */
  private bits = 0;
  private bit = 1;

  reset(): void {
    this.at = 0;
    this.bits = 0;
    this.bit = 1;
  }

  private room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.at + n));
    this.bytes.copy(grown, 0, 0, this.at);
    this.bytes = grown;
  }

  private uint32(n: number, at: number): void {
    const b = this.bytes;
    b[at] = n & 0xff;
    b[at + 1] = (n >>> 8) & 0xff;
    b[at + 2] = (n >>> 16) & 0xff;
    b[at + 3] = n >>> 24;
  }

  /** A BYTE_ARRAY value: a string as its UTF-8 bytes. */
  byteArray(v: ColumnValue): void {
    if (typeof v === 'string') {
      this.room(4 + v.length * 3);
      const n = this.bytes.write(v, this.at + 4, 'utf8');
      this.uint32(n, this.at);
      this.at += 4 + n;
    } else if (v instanceof Uint8Array) {
      this.room(4 + v.length);
      this.uint32(v.length, this.at);
      this.bytes.set(v, this.at + 4);
      this.at += 4 + v.length;
    } else throw new InternalError(`a ${typeof v} in a BYTE_ARRAY column`);
  }

  int32(v: ColumnValue): void {
    if (typeof v !== 'number' || (v | 0) !== v) throw new InternalError(`${String(v)} in an INT32 column`);
    this.room(4);
    this.uint32(v >>> 0, this.at);
    this.at += 4;
  }

  /** An INT64 value: a bigint, or a number that is an integer (epoch milliseconds). */
  int64(v: ColumnValue): void {
    this.room(8);
    if (typeof v === 'bigint') this.bytes.writeBigInt64LE(v, this.at);
    else if (typeof v === 'number' && Number.isSafeInteger(v)) {
      this.uint32(v >>> 0, this.at);
      // Two's complement high word: floor division keeps a negative number's sign.
      this.uint32(Math.floor(v / 0x1_0000_0000) >>> 0, this.at + 4);
    } else throw new InternalError(`${String(v)} in an INT64 column`);
    this.at += 8;
  }

  double(v: ColumnValue): void {
    if (typeof v !== 'number') throw new InternalError(`a ${typeof v} in a DOUBLE column`);
    this.room(8);
    this.bytes.writeDoubleLE(v, this.at);
    this.at += 8;
  }

  boolean(v: ColumnValue): void {
    if (typeof v !== 'boolean') throw new InternalError(`a ${typeof v} in a BOOLEAN column`);
    if (v) this.bits |= this.bit;
    this.bit <<= 1;
    if (this.bit === 0x100) this.flushBits();
  }

  private flushBits(): void {
    this.room(1);
    this.bytes[this.at++] = this.bits;
    this.bits = 0;
    this.bit = 1;
  }

  /** The page's bytes (a last partial byte of booleans included). */
  view(): Uint8Array {
    if (this.bit > 1) this.flushBits();
    return this.bytes.subarray(0, this.at);
  }
}
