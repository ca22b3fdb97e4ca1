import { createS3Client } from '../../../core/clients';
import { parseConfig } from '../../../core/config';

/**
 * The archive's S3 client fails an attempt on a silent connection (no byte either way for archive.s3IdleTimeoutMs)
 * but sets no total request limit, which would cut a large upload on a slow but working link. The integration test
 * (test/integration/faults/network-archiver.test.ts, "silent S3 link") shows the effect; this pins the options.
 */
describe('createS3Client', () => {
  async function handlerConfig(config = parseConfig({})): Promise<Record<string, unknown>> {
    const handler = createS3Client(config).config.requestHandler as unknown as {
      configProvider: Promise<Record<string, unknown>>;
    };
    return handler.configProvider;
  }

  it('has an idle (socket) timeout and a connection timeout of archive.s3IdleTimeoutMs, and no total timeout', async () => {
    const c = await handlerConfig();
    expect(c.socketTimeout).toBe(30_000);
    expect(c.connectionTimeout).toBe(30_000);
    expect(c.requestTimeout).toBeUndefined();
  });

  it('takes the setting', async () => {
    const c = await handlerConfig(parseConfig({ archive: { s3IdleTimeoutMs: 4000 } }));
    expect(c.socketTimeout).toBe(4000);
  });
});
