import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../../../core/error-codes';
import { ConflictError, NotFoundError, TtlstreamError, ValidationError } from '../../../core/errors';
import type { TableTtlSettings } from '../../../policy/settings';
import { CARRIED_SETTINGS, primaryAttribute } from '../../ttl-state';
import { SigV4Error, SigV4Verifier, hostAllowed } from '../auth/sigv4';
import type { RouteContext } from '../context';
import { boundMessage } from '../errors';
import { ForbiddenKeyError, parseJsonBody } from '../json-body';

/**
 * A DynamoDB-compatible endpoint for the two TTL operations, so the AWS SDKs and CLI can manage
 * ttlstream TTL with `endpoint`/`--endpoint-url` pointed here. It speaks the awsJson1_0 protocol:
 * `POST /`, `X-Amz-Target: DynamoDB_20120810.<Operation>`, DynamoDB's request and error bodies, and
 * SigV4 over the raw body. It maps to dynamodb mode (a single AttributeName).
 */

const TARGET_PREFIX = 'DynamoDB_20120810.';
const CONTENT_TYPE = 'application/x-amz-json-1.0';
const DYNAMODB_NS = 'com.amazonaws.dynamodb.v20120810';
const CORAL_NS = 'com.amazon.coral.service';

type AwsErrorName =
  | 'ValidationException'
  | 'ResourceNotFoundException'
  | 'SerializationException'
  | 'UnknownOperationException'
  | 'InternalServerError'
  | 'RequestEntityTooLargeException'
  | SigV4Error['type'];

/** HTTP status and namespace per error, as DynamoDB answers them. */
const AWS_ERRORS: Record<AwsErrorName, { status: number; ns: string }> = {
  ValidationException: { status: 400, ns: DYNAMODB_NS },
  ResourceNotFoundException: { status: 400, ns: DYNAMODB_NS },
  SerializationException: { status: 400, ns: CORAL_NS },
  UnknownOperationException: { status: 400, ns: CORAL_NS },
  RequestEntityTooLargeException: { status: 413, ns: CORAL_NS },
  InternalServerError: { status: 500, ns: DYNAMODB_NS },
  MissingAuthenticationTokenException: { status: 403, ns: CORAL_NS },
  IncompleteSignatureException: { status: 400, ns: CORAL_NS },
  UnrecognizedClientException: { status: 400, ns: CORAL_NS },
  InvalidSignatureException: { status: 400, ns: CORAL_NS },
};

/** An error the endpoint answers with as is: `type` is the AWS exception name. */
export class AwsError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_AWS_API';
  constructor(
    readonly type: AwsErrorName,
    message: string,
  ) {
    super(message);
  }
}

export interface AwsErrorResponse {
  status: number;
  body: { __type: string; message: string };
}

/** Map any error to DynamoDB's wire error; internal failures say nothing about internals. */
export function toAwsError(err: unknown): AwsErrorResponse {
  let type: AwsErrorName = 'InternalServerError';
  let message = 'Internal server error';
  if (err instanceof AwsError) [type, message] = [err.type, err.message];
  else if (err instanceof SigV4Error) [type, message] = [err.type, err.message];
  else if (err instanceof NotFoundError) [type, message] = ['ResourceNotFoundException', err.message];
  else if (err instanceof ConflictError || err instanceof ValidationError)
    [type, message] = ['ValidationException', err.message];
  else if ((err as { code?: string } | null)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    [type, message] = ['RequestEntityTooLargeException', 'Request entity too large'];
  }
  const { status, ns } = AWS_ERRORS[type];
  return { status, body: { __type: `${ns}#${type}`, message: boundMessage(message) } };
}

/**
 * Request validation in DynamoDB's two stages and words. First deserialization: a member of the
 * wrong JSON type is a SerializationException (Coral's message names the JSON token and the target
 * type). Then the model's constraints, all of them at once: `1 validation error detected: Value 'ab'
 * at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3`,
 * several joined by "; ". Unknown members are ignored, as DynamoDB does.
 */
type JsonType = 'String' | 'Boolean' | 'Structure';

function jsonToken(value: unknown): string {
  if (value === true) return 'TRUE_VALUE';
  if (value === false) return 'FALSE_VALUE';
  if (typeof value === 'number') return 'NUMBER_VALUE';
  if (typeof value === 'string') return 'STRING_VALUE';
  return 'VALUE';
}

/** The member's value, or undefined for absent and null; SerializationException for a wrong type. */
function member(value: unknown, type: JsonType): unknown {
  if (value === undefined || value === null) return undefined;
  const ok =
    type === 'Structure'
      ? typeof value === 'object' && !Array.isArray(value)
      : typeof value === (type === 'String' ? 'string' : 'boolean');
  if (ok) return value;
  if (Array.isArray(value))
    throw new AwsError('SerializationException', 'Start of list found where not expected');
  if (typeof value === 'object')
    throw new AwsError('SerializationException', 'Start of structure or map found where not expected.');
  throw new AwsError('SerializationException', `${jsonToken(value)} can not be converted to a ${type}`);
}

const TABLE_NAME_PATTERN = /^[a-zA-Z0-9_.-]+$/;

class Violations {
  readonly list: string[] = [];
  required(path: string, value: unknown): value is NonNullable<unknown> {
    if (value !== undefined) return true;
    this.list.push(`Value null at '${path}' failed to satisfy constraint: Member must not be null`);
    return false;
  }
  length(path: string, value: string, min: number, max: number): void {
    const shown = `Value '${value}' at '${path}' failed to satisfy constraint: Member must`;
    if (value.length < min) this.list.push(`${shown} have length greater than or equal to ${min}`);
    if (value.length > max) this.list.push(`${shown} have length less than or equal to ${max}`);
  }
  tableName(value: unknown): void {
    if (!this.required('tableName', value)) return;
    const name = value as string;
    this.length('tableName', name, 3, 255);
    if (name.length > 0 && !TABLE_NAME_PATTERN.test(name)) {
      this.list.push(
        `Value '${name}' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+`,
      );
    }
  }
  check(): void {
    const n = this.list.length;
    if (n === 0) return;
    throw new AwsError(
      'ValidationException',
      `${n} validation error${n > 1 ? 's' : ''} detected: ${this.list.join('; ')}`,
    );
  }
}

function structure(input: unknown): Record<string, unknown> {
  return (member(input, 'Structure') as Record<string, unknown> | undefined) ?? {};
}

export function parseDescribeInput(input: unknown): { TableName: string } {
  const body = structure(input);
  const TableName = member(body.TableName, 'String') as string | undefined;
  const v = new Violations();
  v.tableName(TableName);
  v.check();
  return { TableName: TableName as string };
}

export function parseUpdateInput(input: unknown): {
  TableName: string;
  TimeToLiveSpecification: { Enabled: boolean; AttributeName: string };
} {
  const body = structure(input);
  const TableName = member(body.TableName, 'String') as string | undefined;
  const spec = member(body.TimeToLiveSpecification, 'Structure') as Record<string, unknown> | undefined;
  const Enabled = member(spec?.Enabled, 'Boolean') as boolean | undefined;
  const AttributeName = member(spec?.AttributeName, 'String') as string | undefined;
  const v = new Violations();
  v.tableName(TableName);
  if (v.required('timeToLiveSpecification', spec)) {
    v.required('timeToLiveSpecification.enabled', Enabled);
    if (v.required('timeToLiveSpecification.attributeName', AttributeName))
      v.length('timeToLiveSpecification.attributeName', AttributeName as string, 1, 255);
  }
  v.check();
  return {
    TableName: TableName as string,
    TimeToLiveSpecification: { Enabled: Enabled as boolean, AttributeName: AttributeName as string },
  };
}

const OPERATIONS = new Set<string>(['UpdateTimeToLive', 'DescribeTimeToLive']);

export const dynamodbEndpoint: FastifyPluginAsync<RouteContext> = async (app, ctx) => {
  const api = ctx.options;
  const verifier = verifierFor(app, ctx);
  // A read needs no signature when reads are open; a signature that is present is always checked.
  const isAnonymousRead = (request: FastifyRequest): boolean =>
    operationOf(request) === 'DescribeTimeToLive' &&
    api.openReads &&
    request.headers.authorization === undefined;

  // The signature covers the exact bytes sent, so this scope keeps every body raw, whatever its type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-amzn-RequestId', request.id);
  });

  // Everything but the signature itself is checked before the body is read: an unsigned caller, an
  // unknown key or a session token is refused whatever (and however much) it sends.
  app.addHook('onRequest', async (request) => {
    if (!isAnonymousRead(request)) verifier.precheck(request);
  });

  app.setErrorHandler((err, request, reply) => {
    const mapped = toAwsError(err);
    if (mapped.status >= 500)
      ctx.logger.error({ err, route: 'POST /', reqId: request.id }, 'AWS-compatible request failed');
    return sendJson(reply, mapped.status, mapped.body);
  });

  // Not in the OpenAPI document: AWS's own DynamoDB API model describes this endpoint (control/api/openapi.ts).
  app.post('/', { schema: { hide: true } }, async (request, reply) => {
    const target = headerString(request, 'x-amz-target') ?? '';
    const operation = operationOf(request);
    const known = OPERATIONS.has(operation);
    ctx.labelRoute(request, known ? `aws:${operation}` : 'aws:unknown');

    let accessKeyId: string | undefined;
    if (!isAnonymousRead(request))
      accessKeyId = verifier.verify(sigv4Request(request), Date.now()).accessKeyId;

    if (!known)
      throw new AwsError('UnknownOperationException', `Unknown operation: ${target || '(no X-Amz-Target)'}`);
    const input = parseJson(request);
    const answer =
      operation === 'DescribeTimeToLive'
        ? await describeTimeToLive(ctx, input)
        : await updateTimeToLive(ctx, input, `aws:${accessKeyId ?? 'anonymous'}`);
    return sendJson(reply, 200, answer);
  });
};

/** The SigV4 check of this endpoint: api.awsCredentials, for the hosts the API answers on. */
function verifierFor(app: FastifyInstance, ctx: RouteContext): SigV4Verifier {
  const api = ctx.options;
  const wildcard = api.host === '0.0.0.0' || api.host === '::';
  const hostNames = [
    ...(wildcard ? [] : [api.host.includes(':') ? `[${api.host}]` : api.host]),
    ...api.hosts,
  ];
  return new SigV4Verifier({
    credentials: api.awsCredentials,
    region: api.region,
    service: 'dynamodb',
    hostAllowed: (host) => {
      const address = app.server.address();
      const port = typeof address === 'object' && address !== null ? address.port : api.port;
      return hostAllowed(host, port, hostNames);
    },
  });
}

/** The DynamoDB operation named by `X-Amz-Target` ('' for anything else). */
function operationOf(request: FastifyRequest): string {
  const target = headerString(request, 'x-amz-target') ?? '';
  return target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : '';
}

async function describeTimeToLive(ctx: RouteContext, input: unknown): Promise<unknown> {
  const { TableName } = parseDescribeInput(input);
  const d = await ctx.store.describe(TableName);
  return {
    TimeToLiveDescription: {
      TimeToLiveStatus: d.status,
      ...(d.settings ? { AttributeName: primaryAttribute(d.settings.policy) } : {}),
    },
  };
}

async function updateTimeToLive(ctx: RouteContext, input: unknown, by: string): Promise<unknown> {
  const { TableName, TimeToLiveSpecification: spec } = parseUpdateInput(input);
  const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: spec.AttributeName } };
  // DynamoDB's answers to an update that changes nothing, unless the deployment chose ttlstream's.
  await ctx.store.update(
    TableName,
    // The AWS API knows nothing of legal holds, archive retention or the expiry index: an update never drops them.
    { enabled: spec.Enabled, settings, carry: CARRIED_SETTINGS },
    by,
    ctx.options.awsIdempotentUpdates ? 'ttlstream' : 'dynamodb',
  );
  return { TimeToLiveSpecification: { Enabled: spec.Enabled, AttributeName: spec.AttributeName } };
}

function parseJson(request: FastifyRequest): unknown {
  const type = (headerString(request, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  // DynamoDB itself accepts application/json too (some HTTP clients send nothing else).
  if (type !== CONTENT_TYPE && type !== 'application/x-amz-json-1.1' && type !== 'application/json') {
    throw new AwsError(
      'SerializationException',
      `Content-Type must be ${CONTENT_TYPE}, got '${type || '(none)'}'`,
    );
  }
  const raw = rawBody(request).toString('utf8');
  if (raw.trim() === '') return {};
  try {
    return parseJsonBody(raw);
  } catch (err) {
    if (err instanceof ForbiddenKeyError)
      throw new AwsError('SerializationException', `Request body has a ${err.message}`);
    throw new AwsError('SerializationException', 'Request body is not valid JSON');
  }
}

function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

function sigv4Request(request: FastifyRequest) {
  const url = request.raw.url ?? '/';
  const q = url.indexOf('?');
  return {
    method: request.method,
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? '' : url.slice(q + 1),
    headers: request.headers,
    body: rawBody(request),
  };
}

function headerString(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  // A Buffer, so fastify adds no charset: DynamoDB's content type is exactly application/x-amz-json-1.0.
  return reply
    .status(status)
    .type(CONTENT_TYPE)
    .send(Buffer.from(JSON.stringify(body), 'utf8'));
}
