// The low-level parts of hyparquet-writer that parquet-write.ts uses (its Thrift serialisation of page headers, the
// footer and the offset index; its byte writer; its RLE/bit-packed hybrid). The package declares their types only
// under node16 module resolution; the project uses node's.
declare module 'hyparquet-writer/src/bytewriter.js' {
  export class ByteWriter {
    constructor(initialSize?: number);
    buffer: ArrayBuffer;
    view: DataView;
    /** Bytes written in all (what offsets in the file count from). */
    offset: number;
    /** Bytes in `buffer`. */
    index: number;
    ensure(size: number): void;
    finish(): void;
    getBuffer(): ArrayBuffer;
    getBytes(): Uint8Array;
    appendUint8(value: number): void;
    appendUint32(value: number): void;
    appendInt32(value: number): void;
    appendInt64(value: bigint): void;
    appendFloat32(value: number): void;
    appendFloat64(value: number): void;
    appendBuffer(value: ArrayBuffer): void;
    appendBytes(value: Uint8Array): void;
    appendVarInt(value: number): void;
    appendVarBigInt(value: bigint): void;
    appendZigZag(value: number | bigint): void;
  }
}

declare module 'hyparquet-writer/src/datapage.js' {
  import type { PageHeader } from 'hyparquet';
  import type { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
  export function writePageHeader(writer: ByteWriter, header: PageHeader): void;
}

declare module 'hyparquet-writer/src/metadata.js' {
  import type { FileMetaData } from 'hyparquet';
  import type { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
  /** The footer's Thrift and its 4-byte length (not the closing PAR1); FileMetaData's metadata_length is not written. */
  export function writeMetadata(writer: ByteWriter, metadata: Omit<FileMetaData, 'metadata_length'>): void;
}

declare module 'hyparquet-writer/src/indexes.js' {
  import type { ColumnChunk, OffsetIndex } from 'hyparquet';
  import type { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
  /** Writes each chunk's offset index (when it has more than one page) and sets its offset and length on the chunk. */
  export function writeIndexes(
    writer: ByteWriter,
    indexes: Array<{ chunk: ColumnChunk; offsetIndex?: OffsetIndex }>,
  ): void;
}

declare module 'hyparquet-writer/src/encoding.js' {
  import type { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
  /** The RLE/bit-packed hybrid of `values` at `bitWidth`, without a length prefix; returns its byte length. */
  export function writeRleBitPackedHybrid(writer: ByteWriter, values: Uint8Array, bitWidth: number): number;
}
