import { ConflictError, NotFoundError, RetryableError, ValidationError } from '../../../../core/errors';
import { UnauthorizedError } from '../../../../control/api/auth/bearer';
import { SigV4Error } from '../../../../control/api/auth/sigv4';
import { AwsError, toAwsError } from '../../../../control/api/aws/dynamodb-endpoint';
import { mapError, parseInput } from '../../../../control/api/errors';
import { ExpiringQuerySchema, PutTtlBodySchema, TableParamsSchema } from '../../../../control/api/schemas';

describe('REST error mapping', () => {
  it.each([
    [new ValidationError('body.enabled: required'), 400, 'validation-error'],
    [new UnauthorizedError('invalid bearer token'), 401, 'unauthorized'],
    [new NotFoundError('Requested resource not found: Table: t not found'), 404, 'not-found'],
    [
      new ConflictError('Time to live has been modified multiple times within a fixed interval'),
      409,
      'conflict',
    ],
  ])('maps %p to %i', (err, status, code) => {
    expect(mapError(err)).toEqual({ status, body: { error: code, message: err.message } });
  });

  it('maps fastify parse errors by code, naming the body', () => {
    expect(
      mapError({ code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400, message: 'Unexpected token' }),
    ).toEqual({
      status: 400,
      body: { error: 'invalid-json', message: 'body: not valid JSON (Unexpected token)' },
    });
    expect(
      mapError({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413, message: 'too large' }, 1024),
    ).toEqual({
      status: 413,
      body: {
        error: 'payload-too-large',
        message: 'body: larger than the limit of 1024 bytes (api.bodyLimitBytes)',
      },
    });
    expect(
      mapError({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415, message: 'Unsupported Media Type' })
        .status,
    ).toBe(415);
  });

  it('keeps other 4xx statuses, answers DynamoDB trouble with 503 and anything else with an opaque 500', () => {
    expect(mapError({ statusCode: 400, message: "'%' is not a valid url component" }).status).toBe(400);
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    expect(mapError(throttled)).toMatchObject({ status: 503, body: { error: 'unavailable' } });
    expect(mapError(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })).status).toBe(503);
    const internal = mapError(new Error('secret internal detail'));
    expect(internal).toEqual({
      status: 500,
      body: { error: 'internal', message: 'internal error; see the server log' },
    });
    expect(mapError(new RetryableError('x')).status).toBe(500);
  });
});

describe('zod issues → messages that name the field', () => {
  const bodyError = (body: unknown): string => {
    try {
      parseInput('body', PutTtlBodySchema, body);
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError);
      return (err as Error).message;
    }
    throw new Error('expected a validation error');
  };

  it.each([
    [
      { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: '' } } },
      'body.settings.policy.attributeName: attribute name must not be empty',
    ],
    [
      { enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: 'x'.repeat(256) } } },
      'body.settings.policy.attributeName: attribute name must be at most 255 characters',
    ],
    [
      { enabled: true, settings: { policy: { mode: 'ttl', attributeName: 'x' } } },
      "body.settings.policy.mode: Invalid discriminator value. Expected 'dynamodb' | 'cosmos' | 'mongo'",
    ],
    [{ enabled: 'yes' }, 'body.enabled: expected true or false'],
    [{}, 'body.enabled: required'],
    [{ enabled: true }, 'body.settings: required when enabled is true'],
    [{ enable: true }, 'body.enabled: required; body: unknown field "enable"'],
    [undefined, 'body: expected object, received undefined'],
    [
      { enabled: true, settings: { policy: { mode: 'mongo', expireAfterSeconds: -5, timeField: 't' } } },
      'body.settings.policy.expireAfterSeconds: Too small: expected number to be >=0',
    ],
    [
      { enabled: true, settings: { policy: { mode: 'cosmos', defaultTtl: 1.5 } } },
      'body.settings.policy.defaultTtl: none of the alternatives matched: expected null | expected -1 | defaultTtl must be an integer',
    ],
  ])('%j → %s', (body, message) => {
    expect(bodyError(body)).toBe(message);
  });

  it('names query parameters and path parameters', () => {
    expect(() => parseInput('query', ExpiringQuerySchema, { within: 'abc' })).toThrow(
      'query.within: within must be a whole number',
    );
    expect(() => parseInput('query', ExpiringQuerySchema, { limit: '0' })).toThrow(
      'query.limit: limit must be at least 1',
    );
    expect(() => parseInput('query', ExpiringQuerySchema, { limit: '100001' })).toThrow(
      'query.limit: limit must be at most 100000',
    );
    expect(() => parseInput('query', ExpiringQuerySchema, { within: '5', bogus: '1' })).toThrow(
      'query: unknown field "bogus"',
    );
    expect(() => parseInput('params', TableParamsSchema, { table: 'ab' })).toThrow(
      'params.table: table names are at least 3 characters',
    );
    expect(parseInput('query', ExpiringQuerySchema, {})).toEqual({ within: 3600, limit: 10_000 });
    expect(parseInput('query', ExpiringQuerySchema, { within: '0', limit: '7' })).toEqual({
      within: 0,
      limit: 7,
    });
  });
});

describe('AWS-compatible error mapping', () => {
  it.each([
    [
      new NotFoundError('Requested resource not found: Table: t not found'),
      400,
      'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException',
    ],
    [
      new ConflictError('Time to live has been modified multiple times within a fixed interval'),
      400,
      'com.amazonaws.dynamodb.v20120810#ValidationException',
    ],
    [new ValidationError('bad'), 400, 'com.amazonaws.dynamodb.v20120810#ValidationException'],
    [
      new SigV4Error('MissingAuthenticationTokenException', 'Request is missing Authentication Token'),
      403,
      'com.amazon.coral.service#MissingAuthenticationTokenException',
    ],
    [
      new SigV4Error('UnrecognizedClientException', 'm'),
      400,
      'com.amazon.coral.service#UnrecognizedClientException',
    ],
    [
      new SigV4Error('InvalidSignatureException', 'm'),
      400,
      'com.amazon.coral.service#InvalidSignatureException',
    ],
    [
      new AwsError('UnknownOperationException', 'm'),
      400,
      'com.amazon.coral.service#UnknownOperationException',
    ],
  ])('maps %p to %i %s with the original message', (err, status, type) => {
    expect(toAwsError(err)).toEqual({ status, body: { __type: type, message: err.message } });
  });

  it('hides internal failures behind InternalServerError (retried by the SDKs)', () => {
    expect(toAwsError(new Error('stack details'))).toEqual({
      status: 500,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
        message: 'Internal server error',
      },
    });
  });
});
