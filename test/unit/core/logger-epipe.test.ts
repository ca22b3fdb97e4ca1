import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * `ttlstream run 2>&1 | tee log`, then Ctrl-C kills tee: the log reader is gone. The process must still
 * be able to log (into the void), handle its signals and exit; it used to spin for ever in pino's
 * synchronous exit flush retrying EPIPE. A real pipe, whose reading end the test closes.
 */
describe('the logger after its reader left (EPIPE)', () => {
  it('a process that keeps logging, then exits, stops at once', async () => {
    const script = `
      const { createLogger } = require('./core/logger');
      const log = createLogger({ level: 'info' });
      // A role process handles its signals itself: a busy loop would leave it unkillable but by SIGKILL.
      process.on('SIGTERM', () => process.exit(3));
      process.stdout.write('ready\\n');
      process.stdin.once('data', () => {
        for (let i = 0; i < 2000; i++) log.info({ i, pad: 'x'.repeat(200) }, 'logged after the reader left');
        process.exit(0);
      });
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const started = Date.now();
    const exited = new Promise<{ code: number | null; signal: string | null }>((done) =>
      child.on('exit', (code, signal) => done({ code, signal })),
    );
    await new Promise<void>((ready) => child.stdout.once('data', () => ready()));
    child.stderr.destroy(); // the reader dies
    child.stdin.write('go\n');
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const result = await exited;
    clearTimeout(watchdog);
    expect(result).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(9_000);
  }, 20_000);
});
