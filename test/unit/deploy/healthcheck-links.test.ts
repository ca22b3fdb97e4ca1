import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const SCRIPT = resolve(__dirname, '..', '..', '..', 'deploy', 'docker', 'healthcheck.cjs');

/**
 * The image's HEALTHCHECK under a Service's link variables: TTLSTREAM_API_PORT=tcp://… is not a port, so the check
 * asks the API's default port, as the process listens there (core/service-links.ts). fetch is replaced by a recorder
 * (a preload script): the ports asked are what is tested, and 8080 may be taken on a shared machine.
 */
describe('deploy/docker/healthcheck.cjs with Kubernetes service links', () => {
  let dir: string;
  let preload: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-healthcheck-'));
    preload = join(dir, 'record-fetch.cjs');
    writeFileSync(
      preload,
      "globalThis.fetch = async (url) => { process.stdout.write(url + '\\n'); return { status: 503 }; };\n",
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const asked = (env: NodeJS.ProcessEnv): Promise<string[]> =>
    new Promise((done) => {
      execFile(
        process.execPath,
        ['--require', preload, SCRIPT],
        { env: { PATH: process.env.PATH, ...env } },
        (_e, out) => done(out.split('\n').filter((l) => l !== '')),
      );
    });

  it('skips a link value and asks the default API port', async () => {
    expect(await asked({ TTLSTREAM_API_PORT: 'tcp://10.0.0.1:8080' })).toEqual([
      'http://127.0.0.1:8080/healthz',
    ]);
    expect(
      await asked({
        TTLSTREAM_METRICS_PORT: 'tcp://10.0.0.2:9464',
        TTLSTREAM_API_PORT: 'tcp://10.0.0.1:9000',
      }),
    ).toEqual(['http://127.0.0.1:8080/healthz']);
    expect(await asked({ TTLSTREAM_METRICS_PORT: '9464', TTLSTREAM_API_PORT: '8081' })).toEqual([
      'http://127.0.0.1:9464/healthz',
      'http://127.0.0.1:8081/healthz',
    ]);
  });
});
