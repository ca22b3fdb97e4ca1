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
        /\\/(scanner|producer|archiver|control|consumer|schemas)\\//.test(k.replace(${JSON.stringify(ROOT)}, '')),
      );
      process.stdout.write(JSON.stringify(heavy.map((k) => k.replace(${JSON.stringify(ROOT)}, ''))));
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual([]);
  });
});
