import { spawn } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { exitAfterOutput, isReaderGone } from '../../../core/exit';
import { ROOT_DIR } from '../../support/ports';

/** A stream that completes each write only when told: a pipe whose reader is slow. */
function slowStream(): Writable & { release(): void; written: number } {
  const held: Array<() => void> = [];
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        stream.written += chunk.length;
        held.push(done);
      },
    }),
    {
      written: 0,
      release() {
        for (const done of held.splice(0)) done();
      },
    },
  );
  return stream;
}

describe('exitAfterOutput', () => {
  it('ends the process only once every earlier write of both streams has completed', async () => {
    const out = slowStream();
    const err = slowStream();
    const exits: number[] = [];
    out.write('x'.repeat(100_000));
    err.write('a log line\n');
    exitAfterOutput(3, [out, err], (code) => exits.push(code));
    await new Promise((r) => setImmediate(r));
    expect(exits).toEqual([]);
    out.release();
    await new Promise((r) => setImmediate(r));
    expect(exits).toEqual([]); // stderr still holds its line
    err.release();
    // The empty writes that mark the end complete too.
    for (let i = 0; i < 5 && exits.length === 0; i++) {
      out.release();
      err.release();
      await new Promise((r) => setImmediate(r));
    }
    expect(exits).toEqual([3]);
    expect(out.written).toBe(100_000);
  });

  it('asks for the status after the wait: a reader that left meanwhile is seen', async () => {
    const out = new PassThrough();
    let readerLeft = false;
    out.on('error', () => (readerLeft = true));
    out.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    const code = await new Promise<number>((done) =>
      exitAfterOutput(() => (readerLeft ? 141 : 0), [out], done),
    );
    expect(code).toBe(141);
  });

  it('a real child that prints 4 MiB into a pipe and exits through it delivers every byte', async () => {
    const script = `
      const { exitAfterOutput } = require('./core/exit');
      process.stdout.write('y'.repeat(4 * 1024 * 1024));
      exitAfterOutput(0);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: ROOT_DIR,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let got = 0;
    // A slow reader: the pipe stays full while the child would exit.
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), 300);
    child.stdout.on('data', (b: Buffer) => (got += b.length));
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(code).toBe(0);
    expect(got).toBe(4 * 1024 * 1024);
  }, 20_000);

  it('isReaderGone: EPIPE and ECONNRESET, nothing else', () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    expect(isReaderGone(e('EPIPE'))).toBe(true);
    expect(isReaderGone(e('ECONNRESET'))).toBe(true);
    expect(isReaderGone(e('EIO'))).toBe(false);
    expect(isReaderGone(new Error('x'))).toBe(false);
    expect(isReaderGone(undefined)).toBe(false);
  });
});
