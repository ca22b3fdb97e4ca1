import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import {
  SigV4Error,
  SigV4Verifier,
  formatAmzDate,
  parseAmzDate,
  type SigV4Request,
} from '../../../../../control/api/auth/sigv4';
import { Sha256 } from '../../../../support/control-api';

const KEY = { accessKeyId: 'AKIDTTLSTREAM1', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const OTHER = { accessKeyId: 'AKIDTTLSTREAM2', secretAccessKey: 'second-secret-0123456789' };
const SIGNED_AT = Date.UTC(2025, 0, 15, 10, 30, 0);
const REGION = 'us-east-1';

const verifier = new SigV4Verifier({ credentials: [KEY, OTHER], region: REGION, service: 'dynamodb' });

interface Draft {
  method?: string;
  path?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string;
}

/** Sign with the AWS SDK's signer, then turn the result into what node would hand the server. */
async function signed(
  draft: Draft = {},
  opts: { key?: typeof KEY; at?: number; region?: string; service?: string } = {},
): Promise<SigV4Request> {
  const body =
    draft.body ??
    JSON.stringify({ TableName: 'orders', TimeToLiveSpecification: { Enabled: true, AttributeName: 'exp' } });
  const signer = new SignatureV4({
    service: opts.service ?? 'dynamodb',
    region: opts.region ?? REGION,
    credentials: opts.key ?? KEY,
    sha256: Sha256,
    applyChecksum: false,
  });
  const request = {
    method: draft.method ?? 'POST',
    protocol: 'http:',
    hostname: '127.0.0.1',
    port: 8080,
    path: draft.path ?? '/',
    query: draft.query ?? {},
    headers: {
      host: '127.0.0.1:8080',
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'DynamoDB_20120810.UpdateTimeToLive',
      ...draft.headers,
    },
    body,
  } as unknown as HttpRequest;
  const out = await signer.sign(request, { signingDate: new Date(opts.at ?? SIGNED_AT) });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(out.headers)) headers[k.toLowerCase()] = String(v);
  // The SDK sends the query encoded the way its signer canonicalizes it.
  const query = Object.entries(draft.query ?? {})
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
  return { method: out.method, path: draft.path ?? '/', query, headers, body: Buffer.from(body) };
}

function rejection(req: SigV4Request, now = SIGNED_AT): SigV4Error {
  try {
    verifier.verify(req, now);
  } catch (err) {
    if (err instanceof SigV4Error) return err;
    throw err;
  }
  throw new Error('expected the request to be rejected');
}

describe('SigV4Verifier against requests signed by @smithy/signature-v4', () => {
  it('accepts a correctly signed DynamoDB request and names the key', async () => {
    expect(verifier.verify(await signed(), SIGNED_AT)).toEqual({ accessKeyId: KEY.accessKeyId });
    expect(verifier.verify(await signed({}, { key: OTHER }), SIGNED_AT)).toEqual({
      accessKeyId: OTHER.accessKeyId,
    });
  });

  it('accepts paths and query strings that need encoding (canonicalization agrees with the SDK)', async () => {
    const req = await signed({
      method: 'GET',
      path: '/tables/a%20b/c:d/ttl',
      query: { within: '60', limit: '5', 'odd key': 'a b*(c)' },
      body: '',
    });
    expect(verifier.verify(req, SIGNED_AT).accessKeyId).toBe(KEY.accessKeyId);
    // Order of the query parameters as sent does not matter; their values do.
    const reordered = { ...req, query: req.query.split('&').reverse().join('&') };
    expect(verifier.verify(reordered, SIGNED_AT).accessKeyId).toBe(KEY.accessKeyId);
    expect(rejection({ ...req, query: req.query.replace('limit=5', 'limit=6') }).type).toBe(
      'InvalidSignatureException',
    );
  });

  it('rejects a tampered body', async () => {
    const req = await signed();
    req.body = Buffer.from(req.body.toString().replace('"exp"', '"exq"'));
    expect(rejection(req)).toMatchObject({
      type: 'InvalidSignatureException',
      message: expect.stringContaining(
        'The request signature we calculated does not match the signature you provided',
      ),
    });
  });

  it('rejects a tampered signed header (the operation) and a changed date', async () => {
    const req = await signed();
    expect(
      rejection({ ...req, headers: { ...req.headers, 'x-amz-target': 'DynamoDB_20120810.DeleteTable' } })
        .type,
    ).toBe('InvalidSignatureException');
    const later = formatAmzDate(SIGNED_AT + 1000);
    expect(rejection({ ...req, headers: { ...req.headers, 'x-amz-date': later } }, SIGNED_AT).type).toBe(
      'InvalidSignatureException',
    );
  });

  it('rejects a request signed with the wrong secret for a known key', async () => {
    const req = await signed(
      {},
      { key: { accessKeyId: KEY.accessKeyId, secretAccessKey: 'not-the-secret' } },
    );
    expect(rejection(req).type).toBe('InvalidSignatureException');
  });

  it('rejects an unknown access key as UnrecognizedClientException', async () => {
    const req = await signed(
      {},
      { key: { accessKeyId: 'AKIDUNKNOWN', secretAccessKey: KEY.secretAccessKey } },
    );
    expect(rejection(req)).toMatchObject({
      type: 'UnrecognizedClientException',
      message: 'The security token included in the request is invalid.',
    });
  });

  it('accepts up to 15 minutes of clock skew and rejects more, either way', async () => {
    const req = await signed();
    const minute = 60_000;
    expect(verifier.verify(req, SIGNED_AT + 15 * minute).accessKeyId).toBe(KEY.accessKeyId);
    expect(verifier.verify(req, SIGNED_AT - 15 * minute).accessKeyId).toBe(KEY.accessKeyId);
    expect(rejection(req, SIGNED_AT + 15 * minute + 1000)).toMatchObject({
      type: 'InvalidSignatureException',
      message: expect.stringMatching(
        /^Signature expired: 20250115T103000Z is now earlier than 20250115T103001Z/,
      ),
    });
    expect(rejection(req, SIGNED_AT - 16 * minute)).toMatchObject({
      type: 'InvalidSignatureException',
      message: expect.stringMatching(/^Signature not yet current/),
    });
  });

  it('rejects a scope for another region or service', async () => {
    expect(rejection(await signed({}, { region: 'eu-west-1' })).message).toContain("not 'eu-west-1'");
    expect(rejection(await signed({}, { service: 's3' })).message).toContain("correct service: 'dynamodb'");
  });

  it('answers a missing Authorization header with MissingAuthenticationTokenException', async () => {
    const req = await signed();
    const { authorization: _dropped, ...headers } = req.headers as Record<string, string>;
    expect(rejection({ ...req, headers })).toMatchObject({
      type: 'MissingAuthenticationTokenException',
      message: 'Request is missing Authentication Token',
    });
  });

  it.each([
    ['another scheme', 'Bearer abcdefghijklmnop'],
    [
      'no Signature',
      'AWS4-HMAC-SHA256 Credential=AKIDTTLSTREAM1/20250115/us-east-1/dynamodb/aws4_request, SignedHeaders=host',
    ],
    [
      'a short credential',
      'AWS4-HMAC-SHA256 Credential=AKIDTTLSTREAM1/20250115, SignedHeaders=host, Signature=00',
    ],
  ])(
    'answers a malformed Authorization header (%s) with IncompleteSignatureException',
    async (_name, value) => {
      const req = await signed();
      expect(rejection({ ...req, headers: { ...req.headers, authorization: value } }).type).toBe(
        'IncompleteSignatureException',
      );
    },
  );

  it('requires X-Amz-Date, in the basic format, matching the credential scope date', async () => {
    const req = await signed();
    const { 'x-amz-date': _d, ...noDate } = req.headers as Record<string, string>;
    expect(rejection({ ...req, headers: noDate }).type).toBe('IncompleteSignatureException');
    expect(
      rejection({ ...req, headers: { ...req.headers, 'x-amz-date': '2025-01-15T10:30:00Z' } }).type,
    ).toBe('IncompleteSignatureException');
    const nextDay = formatAmzDate(SIGNED_AT + 86_400_000);
    expect(
      rejection({ ...req, headers: { ...req.headers, 'x-amz-date': nextDay } }, SIGNED_AT + 86_400_000)
        .message,
    ).toContain('Date in Credential scope does not match');
  });

  it('requires host to be signed', async () => {
    const req = await signed();
    const auth = String(req.headers.authorization).replace(
      'SignedHeaders=content-type;host;',
      'SignedHeaders=content-type;',
    );
    expect(rejection({ ...req, headers: { ...req.headers, authorization: auth } }).message).toContain(
      "'Host' must be a 'SignedHeader'",
    );
  });
});

describe('SigV4Verifier on the published AWS test-suite vector "get-vanilla"', () => {
  // GET / on example.amazonaws.com, 20150830T123600Z, us-east-1, service "service", the AWS example key.
  const vanilla = new SigV4Verifier({
    credentials: [
      { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    ],
    region: 'us-east-1',
    service: 'service',
  });
  const request = (signature: string): SigV4Request => ({
    method: 'GET',
    path: '/',
    query: '',
    headers: {
      host: 'example.amazonaws.com',
      'x-amz-date': '20150830T123600Z',
      authorization: `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=${signature}`,
    },
    body: Buffer.alloc(0),
  });
  const now = Date.UTC(2015, 7, 30, 12, 36, 0);

  it('accepts the published signature', () => {
    expect(
      vanilla.verify(request('5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'), now)
        .accessKeyId,
    ).toBe('AKIDEXAMPLE');
  });

  it('rejects it with one digit changed', () => {
    expect(() =>
      vanilla.verify(request('5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf30'), now),
    ).toThrow(SigV4Error);
  });
});

describe('X-Amz-Date parsing', () => {
  it('round-trips valid dates and refuses impossible ones', () => {
    expect(parseAmzDate('20150830T123600Z')).toBe(Date.UTC(2015, 7, 30, 12, 36, 0));
    expect(formatAmzDate(Date.UTC(2015, 7, 30, 12, 36, 0))).toBe('20150830T123600Z');
    expect(parseAmzDate('20150231T000000Z')).toBeUndefined();
    expect(parseAmzDate('20150830T123600')).toBeUndefined();
  });
});
