import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodError, ZodType, output } from 'zod';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { isDynamoThrottleOrTransient } from '../../core/retry';
import { UnauthorizedError } from './auth/bearer';
import { ForbiddenKeyError } from './json-body';

/** The body of every REST error: a stable machine code and a message naming the field and the problem. */
export interface ApiErrorBody {
  error: string;
  message: string;
}

export interface MappedError {
  status: number;
  body: ApiErrorBody;
}

/** Fastify's own request errors (parsing, size), by code. */
const FASTIFY_CODES: Record<string, { status: number; error: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, error: 'invalid-json' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, error: 'invalid-json' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, error: 'payload-too-large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, error: 'unsupported-media-type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, error: 'bad-request' },
};

/** What a 503 (the DynamoDB API down or throttling) tells the client to wait, in seconds. */
export const UNAVAILABLE_RETRY_AFTER_S = 1;

/** Longest error message any answer carries: a message built from input must not grow with it. */
export const MAX_MESSAGE_CHARS = 512;
/** Unknown field names listed in one message; the rest are counted. */
const MAX_LISTED_KEYS = 5;
/** Characters of one unknown field name quoted in a message. */
const MAX_KEY_CHARS = 40;

/**
 * Cut a message to MAX_MESSAGE_CHARS. Messages quote input (a field name, a URL), and an answer whose
 * size follows the request's (a 2.5 MB list of unknown keys, a 12 KB URL echoed) is an amplifier.
 */
export function boundMessage(message: string, max = MAX_MESSAGE_CHARS): string {
  if (message.length <= max) return message;
  const suffix = ` … (${message.length - max} more characters)`;
  return message.slice(0, max - suffix.length) + suffix;
}

/**
 * The one mapping from error classes to HTTP statuses for the REST API. Anything unrecognised is a
 * 500 whose message says nothing about internals (the log has the details).
 */
export function mapError(err: unknown, bodyLimitBytes?: number): MappedError {
  const mapped = mapErrorUnbounded(err, bodyLimitBytes);
  return { status: mapped.status, body: { ...mapped.body, message: boundMessage(mapped.body.message) } };
}

function mapErrorUnbounded(err: unknown, bodyLimitBytes?: number): MappedError {
  if (err instanceof ForbiddenKeyError)
    return { status: 400, body: { error: 'forbidden-key', message: `body: ${err.message}` } };
  if (err instanceof ValidationError)
    return { status: 400, body: { error: 'validation-error', message: err.message } };
  if (err instanceof UnauthorizedError)
    return { status: 401, body: { error: 'unauthorized', message: err.message } };
  if (err instanceof NotFoundError)
    return { status: 404, body: { error: 'not-found', message: err.message } };
  if (err instanceof ConflictError) return { status: 409, body: { error: 'conflict', message: err.message } };
  const fe = err as Partial<FastifyError> | null;
  const known = typeof fe?.code === 'string' ? FASTIFY_CODES[fe.code] : undefined;
  if (known) {
    const message =
      known.status === 413 && bodyLimitBytes !== undefined
        ? `body: larger than the limit of ${bodyLimitBytes} bytes (api.bodyLimitBytes)`
        : known.error === 'invalid-json'
          ? `body: not valid JSON (${fe?.message ?? 'parse error'})`
          : `body: ${fe?.message ?? 'rejected'}`;
    return { status: known.status, body: { error: known.error, message } };
  }
  // Other client errors raised by fastify itself (e.g. a malformed URL) keep their 4xx status.
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, body: { error: 'bad-request', message: fe.message ?? 'bad request' } };
  }
  if (isDynamoThrottleOrTransient(err)) {
    return {
      status: 503,
      body: { error: 'unavailable', message: 'the DynamoDB API is unavailable or throttling; retry later' },
    };
  }
  return { status: 500, body: { error: 'internal', message: 'internal error; see the server log' } };
}

/**
 * `body.settings.policy.attributeName: attribute name must not be empty`: the zod path prefixed by
 * where the value came from (body, query, params), then the problem. All issues, most specific first.
 */
export function formatZodError(where: string, error: ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = [where, ...issue.path.map(String)].join('.');
      return `${path}: ${describeIssue(issue)}`;
    })
    .join('; ');
}

/** Parse request input (body, query, params) or throw a ValidationError naming the field. */
export function parseInput<S extends ZodType>(where: string, schema: S, value: unknown): output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(formatZodError(where, result.error));
  return result.data;
}

type Issue = ZodError['issues'][number];

function describeIssue(issue: Issue): string {
  if (issue.code === 'unrecognized_keys') {
    const listed = issue.keys
      .slice(0, MAX_LISTED_KEYS)
      .map((k) => `"${k.length > MAX_KEY_CHARS ? `${k.slice(0, MAX_KEY_CHARS)}…` : k}"`);
    const more = issue.keys.length - listed.length;
    return `unknown field${issue.keys.length > 1 ? 's' : ''} ${listed.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  }
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    // A union (e.g. cosmos defaultTtl) failed every alternative: say what each one wanted.
    const alternatives = issue.errors.map((branch) =>
      branch.map((i) => stripPrefix(i.message).replace(/, received \w+$/, '')).join(', '),
    );
    return `none of the alternatives matched: ${[...new Set(alternatives)].join(' | ')}`;
  }
  return stripPrefix(issue.message);
}

function stripPrefix(message: string): string {
  return message.replace(/^Invalid input: /, '');
}

/** Install the REST error handler and 404 handler on an instance or plugin scope. */
export function restErrorHandler(logger: Logger, bodyLimitBytes: number) {
  return (err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const mapped = mapError(err, bodyLimitBytes);
    if (mapped.status >= 500) {
      logger.error({ err, route: request.routeOptions.url, method: request.method }, 'request failed');
    }
    if (mapped.status === 401) reply.header('www-authenticate', 'Bearer realm="ttlstream"');
    // The DynamoDB API down or throttling: a client should come back (the typed client retries on it).
    if (mapped.status === 503) reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S));
    return reply.status(mapped.status).send(mapped.body);
  };
}
