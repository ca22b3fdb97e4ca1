import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * Command definitions import only commander and light helpers; actions import the service SDKs when
 * they run. This keeps `--help`, usage errors and quick commands fast. A static import of a heavy
 * module from a command file makes this fail.
 */
describe('CLI start-up', () => {
  it('building the whole command tree loads no service SDK, pipeline module or schema library', () => {
    const script = `
      const { buildProgram } = require('./cli/program');
      buildProgram({ io: { stdout: process.stdout, stderr: process.stderr, env: {}, cwd: '.' }, setExitCode() {} });
      const heavy = Object.keys(require.cache).filter((k) =>
        /node_modules\\/(@aws-sdk|@smithy|kafkajs|fastify|avsc|pino|prom-client|zod)\\//.test(k) ||
        /^\\/(scanner|producer|archiver|control|consumer|schemas)\\//.test(k.replace(${JSON.stringify(ROOT)}, '')),
      );
      process.stdout.write(JSON.stringify(heavy.map((k) => k.replace(${JSON.stringify(ROOT)}, ''))));
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual([]);
  });

  it("a command's context loads a service's SDK only when the command makes its client", () => {
    // `archive query` over a file archive: configuration, the archive root, and nothing of the services.
    const script = `
      const { mkdtempSync } = require('node:fs');
      const { tmpdir } = require('node:os');
      const { join } = require('node:path');
      const { CliContext } = require('./cli/kit/context');
      const { openExistingStorage } = require('./cli/kit/archive-root');
      const loaded = () => Object.keys(require.cache)
        .map((k) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(k)?.[1])
        .filter((m) => m !== undefined && /^(@aws-sdk|@smithy|kafkajs|pino|prom-client|cli-progress)/.test(m));
      const io = { stdout: process.stdout, stderr: process.stderr, env: {}, cwd: '.' };
      const dir = mkdtempSync(join(tmpdir(), 'ttlstream-startup-'));
      const ctx = new CliContext(io, {}, false, { archive: { url: 'file://' + dir } });
      (async () => {
        await openExistingStorage(ctx);
        const before = [...new Set(loaded())].sort();
        ctx.s3;
        const after = [...new Set(loaded())].sort();
        await ctx.close();
        process.stdout.write(JSON.stringify({ before, s3: after.includes('@aws-sdk/client-s3') }));
      })();
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual({ before: [], s3: true });
  });
});
