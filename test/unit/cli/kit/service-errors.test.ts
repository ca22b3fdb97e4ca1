import { createServer, type Server } from 'node:http';
import { freePort } from '../../../support/cli-process';
import { cli, QUIET_OFFLINE } from '../../../support/cli';

// Quiet: the "endpoints: ..." line before the first request is tested in program.test.ts and endpoints.test.ts.

/** Real sockets: a web server where DynamoDB was expected, and ports nobody listens on. */
describe('connection errors name the service, the address and the setting', () => {
  let web: Server;
  let webUrl: string;
  beforeAll(async () => {
    web = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body>Welcome to nginx!</body></html>');
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
    const a = web.address();
    webUrl = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  });
  afterAll(() => new Promise((r) => web.close(r)));

  it('a DynamoDB endpoint that answers HTML is named as such (was: UnknownError / a JSON parse error)', async () => {
    const r = await cli(['ttl', 'list'], { ...QUIET_OFFLINE, TTLSTREAM_DYNAMODB_ENDPOINT: webUrl });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `ttlstream: DynamoDB endpoint ${webUrl} (dynamodb.endpoint / TTLSTREAM_DYNAMODB_ENDPOINT) answered with HTML, not DynamoDB (HTTP 200): is that the right address?\n`,
    );
  });

  it('a DynamoDB endpoint nobody listens on: one line naming it', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const r = await cli(['ttl', 'describe', '--table', 't'], {
      ...QUIET_OFFLINE,
      TTLSTREAM_DYNAMODB_ENDPOINT: url,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^ttlstream: DynamoDB endpoint ${url} \\(dynamodb\\.endpoint / TTLSTREAM_DYNAMODB_ENDPOINT\\) not reachable: .*ECONNREFUSED.*\\n$`,
      ),
    );
  });

  it('Kafka down: one line within a few seconds (was ~18 JSON lines and 33-40 s)', async () => {
    const broker = `127.0.0.1:${await freePort()}`;
    const r = await cli(['topics', 'apply'], { ...QUIET_OFFLINE, TTLSTREAM_KAFKA_BROKERS: broker });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^ttlstream: Kafka brokers ${broker} \\(kafka\\.brokers / TTLSTREAM_KAFKA_BROKERS\\) not reachable: .*ECONNREFUSED.*\\n$`,
      ),
    );
    expect(r.ms).toBeLessThan(5_000);
  }, 60_000);
});
