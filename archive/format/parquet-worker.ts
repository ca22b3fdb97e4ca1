import { parentPort } from 'node:worker_threads';
import { encodeRowChunks } from './parquet-encode';
import type { EncodeReply, EncodeRequest } from './parquet-pool';

/**
 * An encoding thread of the Parquet archive (parquet-pool.ts starts it): encodes one data file per
 * request and hands the bytes back without copying them.
 */
parentPort?.on('message', (request: EncodeRequest) => {
  let reply: EncodeReply;
  try {
    const data = encodeRowChunks(request.chunks, request.context);
    // writeParquet's bytes own their whole ArrayBuffer, so it moves to the archiver's thread as it is.
    const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
    const out = whole ? data : Buffer.from(data);
    reply = { id: request.id, data: out };
    parentPort?.postMessage(reply, [out.buffer as ArrayBuffer]);
  } catch (err) {
    reply = { id: request.id, error: err instanceof Error ? err.message : String(err) };
    parentPort?.postMessage(reply);
  }
});
