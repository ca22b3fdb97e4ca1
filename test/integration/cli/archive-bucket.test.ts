import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../../core/clients';
import { createTestBucket, testConfig, uniqueName } from '../../support/stack';
import { cli } from '../../support/cli';
import { freePort } from '../../support/cli-process';

/**
 * An S3 archive whose bucket does not exist is refused like a missing archive folder, against the stack's
 * real moto S3: 404 is "does not exist", 403 is "access denied", an endpoint nobody answers is "not reachable".
 */
describe('reading commands refuse an S3 archive whose bucket is not there (moto S3)', () => {
  const config = testConfig();
  const endpoint = config.archive.s3Endpoint as string;
  let s3: S3Client;
  let bucket: string;
  let forbidding: Server;
  let forbiddingUrl: string;

  beforeAll(async () => {
    s3 = createS3Client(config);
    bucket = await createTestBucket(s3, uniqueName('cli-bucket'));
    // An S3 endpoint that answers every request 403, as AWS does for a bucket of another account.
    forbidding = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end();
    });
    await new Promise<void>((done) => forbidding.listen(0, '127.0.0.1', done));
    forbiddingUrl = `http://127.0.0.1:${(forbidding.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    s3.destroy();
    await new Promise((done) => forbidding.close(done));
  });

  // The stack's settings come from this process's environment.
  const env = { ...process.env, TTLSTREAM_LOG_LEVEL: 'error' };

  it.each([
    [['archive', 'ls']],
    [['archive', 'show', '--table', 'orders']],
    [
      [
        'replay',
        '--table',
        'orders',
        '--from',
        '2026-01-01T00:00:00Z',
        '--to',
        '2026-01-02T00:00:00Z',
        '--topic',
        'x',
      ],
    ],
  ])('%j: a bucket that does not exist is named with archive.url (exit 2)', async (args) => {
    const missing = uniqueName('no-such-bucket');
    const r = await cli([...args, '--archive', `s3://${missing}/archive`], env);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toContain(
      `ttlstream: archive bucket ${missing} does not exist at S3 endpoint ${endpoint} (--archive, or archive.url / TTLSTREAM_ARCHIVE_URL)\n`,
    );
  });

  it('an existing bucket, even empty, is read (0 files, exit 0)', async () => {
    const r = await cli(['archive', 'ls', '--json', '--archive', `s3://${bucket}/archive`], env);
    expect(r.stderr).not.toMatch(/ttlstream: .*bucket/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([]);
  });

  it('403 says access denied and names the credentials, not "does not exist" (exit 1)', async () => {
    const r = await cli(['archive', 'ls', '--archive', `s3://${bucket}/archive`], {
      ...env,
      TTLSTREAM_ARCHIVE_S3_ENDPOINT: forbiddingUrl,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `ttlstream: archive bucket ${bucket} at S3 endpoint ${forbiddingUrl}: access denied (HTTP 403)`,
    );
    expect(r.stderr).toContain('archive.s3AccessKeyId');
    expect(r.stderr).not.toContain('does not exist');
  });

  it('an endpoint nobody answers is "not reachable", named with archive.s3Endpoint (exit 1)', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const r = await cli(['archive', 'ls', '--archive', `s3://${bucket}/archive`], {
      ...env,
      TTLSTREAM_ARCHIVE_S3_ENDPOINT: closed,
      TTLSTREAM_ARCHIVE_S3_IDLE_TIMEOUT_MS: '2000',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `ttlstream: S3 endpoint ${closed} (archive.s3Endpoint / TTLSTREAM_ARCHIVE_S3_ENDPOINT) not reachable`,
    );
    expect(r.stderr).not.toContain('does not exist');
  });
});
