import { DescribeEndpointsCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { countSdkRetries, createS3Client } from '../../../core/clients';
import { parseConfig } from '../../../core/config';
import { metrics } from '../../../core/metrics';

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

/**
 * SDK retries are counted (ttlstream_sdk_retries_total): the SDK resolves or throws only after its last attempt, so
 * without this a throttled or flaky server is invisible until requests fail outright. The clients here answer from a
 * request handler that returns the given statuses in turn: the SDK's own retry logic decides, as in production.
 */
describe('countSdkRetries', () => {
  const answering = (statuses: number[]) => ({
    async handle() {
      const statusCode = statuses.length > 1 ? (statuses.shift() as number) : (statuses[0] as number);
      return { response: { statusCode, headers: {}, body: Readable.from([]) } };
    },
  });
  const retries = async (service: string, operation: string): Promise<number> =>
    (await metrics.sdkRetries.get()).values.find(
      (v) => v.labels.service === service && v.labels.operation === operation,
    )?.value ?? 0;
  const credentials = { accessKeyId: 'k', secretAccessKey: 's' };

  it('counts the attempts an S3 call needed beyond the first, also when it fails in the end', async () => {
    const before = await retries('s3', 'HeadBucketCommand');
    const ok = new S3Client({ region: 'us-east-1', credentials, requestHandler: answering([503, 503, 200]) });
    countSdkRetries(ok, 's3');
    await ok.send(new HeadBucketCommand({ Bucket: 'b' }));
    expect(await retries('s3', 'HeadBucketCommand')).toBe(before + 2);

    const failing = new S3Client({
      region: 'us-east-1',
      credentials,
      maxAttempts: 2,
      requestHandler: answering([503]),
    });
    countSdkRetries(failing, 's3');
    const errors = async (): Promise<number> =>
      (await metrics.sdkErrors.get()).values
        .filter((v) => v.labels.service === 's3' && v.labels.operation === 'HeadBucketCommand')
        .reduce((n, v) => n + v.value, 0);
    const errorsBefore = await errors();
    await expect(failing.send(new HeadBucketCommand({ Bucket: 'b' }))).rejects.toBeDefined();
    expect(await retries('s3', 'HeadBucketCommand')).toBe(before + 3);
    // The request that failed after its last attempt is counted once (ttlstream_sdk_errors_total); the one that
    // succeeded after retries is not.
    expect(await errors()).toBe(errorsBefore + 1);
  });

  it('counts every S3 request of the archive client by operation (what iam-policy grants is checked against it)', async () => {
    const requests = async (): Promise<number> =>
      (await metrics.s3Requests.get()).values.find((v) => v.labels.operation === 'HeadBucketCommand')
        ?.value ?? 0;
    const before = await requests();
    const s3 = createS3Client(parseConfig({ archive: { s3Endpoint: 'http://127.0.0.1:9' } }));
    s3.config.requestHandler = answering([200]) as unknown as typeof s3.config.requestHandler;
    await s3.send(new HeadBucketCommand({ Bucket: 'b' }));
    expect(await requests()).toBe(before + 1);
    s3.destroy();
  });

  it('counts a DynamoDB 500 retried, and nothing for a call that succeeded at once', async () => {
    const statuses = [500, 200, 200];
    const ddb = new DynamoDBClient({
      region: 'us-east-1',
      credentials,
      requestHandler: {
        async handle() {
          const statusCode = statuses.shift() ?? 200;
          const json =
            statusCode === 200 ? '{"Endpoints":[]}' : '{"__type":"InternalServerError","message":"x"}';
          return {
            response: {
              statusCode,
              headers: { 'content-type': 'application/x-amz-json-1.0' },
              body: Readable.from([Buffer.from(json)]),
            },
          };
        },
      },
    });
    countSdkRetries(ddb, 'dynamodb');
    const before = await retries('dynamodb', 'DescribeEndpointsCommand');
    await ddb.send(new DescribeEndpointsCommand({}));
    expect(await retries('dynamodb', 'DescribeEndpointsCommand')).toBe(before + 1);
    await ddb.send(new DescribeEndpointsCommand({}));
    expect(await retries('dynamodb', 'DescribeEndpointsCommand')).toBe(before + 1);
  });
});
