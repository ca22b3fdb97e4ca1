import { chunkByBytes, type Prepared } from '../../../producer/publisher';

function msg(i: number, bytes: number): Prepared {
  return {
    table: 't',
    kind: 'remove',
    topic: 'x',
    message: { key: `k${i}`, value: Buffer.alloc(bytes), headers: {} },
  };
}

describe('publish chunking by bytes', () => {
  it('keeps small messages in one request', () => {
    const all = Array.from({ length: 100 }, (_, i) => msg(i, 1000));
    expect(chunkByBytes(all, 900 * 1024)).toHaveLength(1);
  });

  it('splits large messages so no request exceeds the limit, keeping order', () => {
    const all = Array.from({ length: 10 }, (_, i) => msg(i, 380 * 1024));
    const chunks = chunkByBytes(all, 900 * 1024);
    expect(chunks.map((c) => c.length)).toEqual([2, 2, 2, 2, 2]);
    expect(chunks.flat().map((m) => m.message.key)).toEqual(all.map((m) => m.message.key));
  });

  it('sends a single message above the limit alone rather than dropping it', () => {
    const chunks = chunkByBytes([msg(0, 10), msg(1, 2_000_000), msg(2, 10)], 900 * 1024);
    expect(chunks.map((c) => c.length)).toEqual([1, 1, 1]);
  });
});
