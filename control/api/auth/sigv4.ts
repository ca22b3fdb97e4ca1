import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { TtlstreamError } from '../../../core/errors';
import type { ErrorCode } from '../../../core/error-codes';

/**
 * AWS Signature Version 4 verification for header-signed requests, written out from the
 * specification rather than borrowed from a signer: the tests sign with @smithy/signature-v4, so
 * the two implementations check each other.
 */

export type SigV4ErrorCode =
  | 'MissingAuthenticationTokenException'
  | 'IncompleteSignatureException'
  | 'UnrecognizedClientException'
  | 'InvalidSignatureException';

/** A request the verifier refuses; `type` is the DynamoDB exception name to answer with. */
export class SigV4Error extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_SIGV4';
  constructor(
    readonly type: SigV4ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface SigV4Credential {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface SigV4Request {
  method: string;
  /** The path exactly as sent (still percent-encoded), without the query string. */
  path: string;
  /** The raw query string without `?` ('' if none). */
  query: string;
  /** Header names in lower case (as node delivers them). */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body bytes: the signature covers them. */
  body: Buffer;
}

export interface SigV4VerifierOptions {
  credentials: SigV4Credential[];
  /** The credential scope must name this region and service, as AWS requires. */
  region: string;
  service: string;
  /** Largest accepted distance between X-Amz-Date and the server clock (AWS: 15 minutes). */
  maxSkewMs?: number;
  /**
   * Whether the signed Host is one this server answers to. Without the check a request signed for
   * another endpoint (another deployment, AWS itself) could be replayed here within the skew window.
   */
  hostAllowed?: (host: string) => boolean;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const DEFAULT_SKEW_MS = 15 * 60 * 1000;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

export class SigV4Verifier {
  private readonly secrets = new Map<string, string>();
  private readonly maxSkewMs: number;

  constructor(private readonly options: SigV4VerifierOptions) {
    for (const c of options.credentials) this.secrets.set(c.accessKeyId, c.secretAccessKey);
    this.maxSkewMs = options.maxSkewMs ?? DEFAULT_SKEW_MS;
  }

  /**
   * The checks that need no body: an Authorization header naming a known key, scoped to this region
   * and service, and no session token. Run before the body is read, so an unsigned or unknown caller
   * is refused without the server reading (or parsing) what it sends.
   */
  precheck(req: Pick<SigV4Request, 'headers'>): {
    auth: ParsedAuthorization;
    accessKeyId: string;
    secret: string;
    scopeDate: string;
    region: string;
    service: string;
  } {
    const authorization = headerValue(req.headers, 'authorization');
    if (authorization === undefined || authorization.trim() === '') {
      throw new SigV4Error('MissingAuthenticationTokenException', 'Request is missing Authentication Token');
    }
    const auth = parseAuthorization(authorization);
    const [accessKeyId, scopeDate, region, service, terminator, ...extra] = auth.credential.split('/');
    if (
      !accessKeyId ||
      !scopeDate ||
      !region ||
      !service ||
      terminator !== 'aws4_request' ||
      extra.length > 0
    ) {
      throw new SigV4Error(
        'IncompleteSignatureException',
        `Credential must have exactly 5 slash-separated components: <key>/<date>/<region>/<service>/aws4_request`,
      );
    }
    // Session credentials are not verified here (no STS behind this endpoint); accepting the request
    // while ignoring its token would treat a temporary credential's key as a long-term one.
    if (headerValue(req.headers, 'x-amz-security-token') !== undefined) {
      throw new SigV4Error(
        'UnrecognizedClientException',
        'The security token included in the request is invalid. This endpoint verifies long-term keys from api.awsCredentials only, not session tokens (X-Amz-Security-Token).',
      );
    }
    const secret = this.secrets.get(accessKeyId);
    if (secret === undefined) {
      throw new SigV4Error(
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    }
    if (region !== this.options.region) {
      throw new SigV4Error(
        'InvalidSignatureException',
        `Credential should be scoped to a valid region, not '${region}'; this endpoint is '${this.options.region}'.`,
      );
    }
    if (service !== this.options.service) {
      throw new SigV4Error(
        'InvalidSignatureException',
        `Credential should be scoped to correct service: '${this.options.service}'.`,
      );
    }
    return { auth, accessKeyId, secret, scopeDate, region, service };
  }

  /** Returns the access key id that signed the request, or throws SigV4Error. */
  verify(req: SigV4Request, nowMs: number): { accessKeyId: string } {
    const { auth, accessKeyId, secret, scopeDate, region, service } = this.precheck(req);

    const amzDate = headerValue(req.headers, 'x-amz-date');
    if (amzDate === undefined) {
      throw new SigV4Error(
        'IncompleteSignatureException',
        "Authorization header requires existence of a 'X-Amz-Date' header.",
      );
    }
    const signedAt = parseAmzDate(amzDate);
    if (signedAt === undefined) {
      throw new SigV4Error(
        'IncompleteSignatureException',
        `X-Amz-Date must be in the ISO-8601 basic format YYYYMMDD'T'HHMMSS'Z', got '${amzDate}'.`,
      );
    }
    if (amzDate.slice(0, 8) !== scopeDate) {
      throw new SigV4Error(
        'InvalidSignatureException',
        `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${scopeDate}' != '${amzDate.slice(0, 8)}', from '${amzDate}'.`,
      );
    }
    const skewMinutes = Math.round(this.maxSkewMs / 60_000);
    if (signedAt < nowMs - this.maxSkewMs) {
      throw new SigV4Error(
        'InvalidSignatureException',
        `Signature expired: ${amzDate} is now earlier than ${formatAmzDate(nowMs - this.maxSkewMs)} (${formatAmzDate(nowMs)} - ${skewMinutes} min.)`,
      );
    }
    if (signedAt > nowMs + this.maxSkewMs) {
      throw new SigV4Error(
        'InvalidSignatureException',
        `Signature not yet current: ${amzDate} is still later than ${formatAmzDate(nowMs + this.maxSkewMs)} (${formatAmzDate(nowMs)} + ${skewMinutes} min.)`,
      );
    }

    if (!auth.signedHeaders.includes('host')) {
      throw new SigV4Error(
        'InvalidSignatureException',
        "'Host' must be a 'SignedHeader' in the AWS Authorization.",
      );
    }
    const host = headerValue(req.headers, 'host') ?? '';
    if (this.options.hostAllowed && !this.options.hostAllowed(host)) {
      throw new SigV4Error(
        'InvalidSignatureException',
        `The signed Host '${host.slice(0, 255)}' is not a host this endpoint answers to (api.host, api.hosts).`,
      );
    }
    const canonical = canonicalRequest(req, auth.signedHeaders);
    const scope = `${scopeDate}/${region}/${service}/aws4_request`;
    const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonical)].join('\n');
    const expected = hmac(signingKey(secret, scopeDate, region, service), stringToSign).toString('hex');
    if (!constantTimeEqualHex(expected, auth.signature)) {
      throw new SigV4Error(
        'InvalidSignatureException',
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
      );
    }
    return { accessKeyId };
  }
}

interface ParsedAuthorization {
  credential: string;
  signedHeaders: string[];
  signature: string;
}

export function parseAuthorization(header: string): ParsedAuthorization {
  const trimmed = header.trim();
  if (!trimmed.startsWith(`${ALGORITHM} `)) {
    throw new SigV4Error(
      'IncompleteSignatureException',
      `Authorization header must use the ${ALGORITHM} algorithm (Signature Version 4).`,
    );
  }
  const params = new Map<string, string>();
  for (const part of trimmed.slice(ALGORITHM.length + 1).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) params.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const missing = ['Credential', 'SignedHeaders', 'Signature'].filter((k) => !params.get(k));
  if (missing.length > 0) {
    throw new SigV4Error(
      'IncompleteSignatureException',
      `Authorization header requires ${missing.map((m) => `'${m}'`).join(', ')} parameter${missing.length > 1 ? 's' : ''}.`,
    );
  }
  return {
    credential: params.get('Credential') as string,
    signedHeaders: (params.get('SignedHeaders') as string).split(';').map((h) => h.trim().toLowerCase()),
    signature: (params.get('Signature') as string).toLowerCase(),
  };
}

/** The canonical request of the SigV4 specification, over the headers the client said it signed. */
export function canonicalRequest(req: SigV4Request, signedHeaders: string[]): string {
  const names = [...new Set(signedHeaders)].sort();
  const headers = names.map((name) => {
    const raw = req.headers[name];
    const value = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
    return `${name}:${value.trim().replace(/\s+/g, ' ')}`;
  });
  return [
    req.method.toUpperCase(),
    canonicalPath(req.path),
    canonicalQuery(req.query),
    ...headers,
    '',
    names.join(';'),
    sha256Hex(req.body),
  ].join('\n');
}

/** Non-S3 services normalize the path and encode it once more (the "double encoding" of the spec). */
function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `/${segments.join('/')}${segments.length > 0 && path.endsWith('/') ? '/' : ''}`;
  return uriEncode(normalized).replace(/%2F/g, '/');
}

function canonicalQuery(query: string): string {
  if (query === '') return '';
  const pairs = query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      const key = eq < 0 ? p : p.slice(0, eq);
      const value = eq < 0 ? '' : p.slice(eq + 1);
      return [uriEncode(safeDecode(key)), uriEncode(safeDecode(value))] as const;
    });
  pairs.sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** RFC 3986 encoding: everything but unreserved characters. */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  const kDate = hmac(`AWS4${secret}`, date);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  return hmac(kService, 'aws4_request');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function constantTimeEqualHex(expected: string, given: string): boolean {
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(given, 'utf8');
  // Lengths are public (64 hex digits); only the content comparison has to be constant-time.
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}

function headerValue(headers: SigV4Request['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function parseAmzDate(value: string): number | undefined {
  const m = AMZ_DATE.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  // Reject dates that Date.UTC silently rolled over (20150231 ...).
  return formatAmzDate(ms) === value ? ms : undefined;
}

export function formatAmzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
}

/** Host names every server answers to, whatever it binds: loopback connections. */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * Whether a Host header value names this server: `name:port` equal to a configured `name:port`, or
 * a name configured without port (and the loopback names) on the port the server listens on. A Host
 * without port means port 80. Names compare case-insensitively.
 */
export function hostAllowed(host: string, listeningPort: number, names: readonly string[]): boolean {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host.trim().toLowerCase());
  if (!m) return false;
  const name = m[1] as string;
  const port = m[2] === undefined ? 80 : Number(m[2]);
  for (const entry of [...names, ...LOOPBACK_HOSTS]) {
    const e = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry.trim().toLowerCase());
    if (!e || e[1] !== name) continue;
    if (e[2] === undefined ? port === listeningPort : Number(e[2]) === port) return true;
  }
  return false;
}
