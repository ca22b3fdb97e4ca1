import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { metrics } from '../../core/metrics';
import { BearerTokens, UnauthorizedError } from './auth/bearer';
import { dynamodbEndpoint } from './aws/dynamodb-endpoint';
import type { ApiDeps, RouteContext } from './context';
import type { ApiOptions } from './options';
import { boundMessage, restErrorHandler } from './errors';
import { ForbiddenKeyError, parseJsonBody } from './json-body';
import { RouteMethods } from './methods';
import { registerOpenApi } from './openapi';
import { guardRoutes } from './routes/guard';
import { healthRoutes } from './routes/health';
import { metricsRoutes } from './routes/metrics';
import { openApiRoutes } from './routes/openapi';
import { previewRoutes } from './routes/preview';
import { tablesRoutes } from './routes/tables';
import { useZodSchemas } from './validation';

/** Connections past api.maxConnections are answered 503 up to this many times the cap; beyond, closed at once. */
export const OVER_CAP_FACTOR = 4;
/** What the 503 of an over-cap connection tells the client to wait. */
export const OVER_CAP_RETRY_AFTER_S = 1;

export type { ApiDeps, RouteContext } from './context';
export { apiOptionsFrom, type ApiInput, type ApiOptions } from './options';

/**
 * The control plane's HTTP server: REST routes, the DynamoDB-compatible TTL endpoint, health and
 * metrics, and its OpenAPI document. Built, not started: the caller chooses `listen` (tests use port 0) or `inject`.
 */
export function buildApiServer(deps: ApiDeps): FastifyInstance {
  const { options } = deps;
  const log = deps.logger.child({ component: 'api' });
  const app = createFastify(options);
  useZodSchemas(app);
  registerOpenApi(app);
  answerOverCapWith503(app, options);
  answerClosingWith503(app);
  parseJsonNamingForbiddenKeys(app);

  const routeLabels = new WeakMap<FastifyRequest, string>();
  const ctx = routeContext(deps, log, routeLabels);
  logAndCountResponses(app, log, routeLabels);
  app.setErrorHandler(restErrorHandler(log, options.bodyLimitBytes));
  answerUnservedMethodsWith405(app);

  app.register(healthRoutes, ctx);
  app.register(metricsRoutes, ctx);
  app.register(tablesRoutes, ctx);
  app.register(previewRoutes, ctx);
  app.register(dynamodbEndpoint, ctx);
  app.register(guardRoutes, ctx);
  app.register(openApiRoutes, ctx);
  return app;
}

/**
 * A path no route has is 404; a path a route has, asked with a method it does not serve, is 405 with `Allow` (RFC
 * 9110). Neither asks for a token: the answer says only what the OpenAPI document says.
 */
function answerUnservedMethodsWith405(app: FastifyInstance): void {
  const routes = RouteMethods.of(app);
  const answer = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = routes.allowedAt(path);
    if (allowed.length === 0)
      return reply.status(404).send({
        error: 'not-found',
        message: boundMessage(`no route ${request.method} ${path}`),
      });
    return reply
      .status(405)
      .header('allow', allowed.join(', '))
      .send({
        error: 'method-not-allowed',
        message: boundMessage(`${request.method} is not served at ${path}; it serves ${allowed.join(', ')}`),
      });
  };
  // Answered before the body is read: a method with a body (QUERY, PATCH) would otherwise be refused for its
  // content type (400) before the not-found handler runs.
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answer(request, reply);
  });
  app.setNotFoundHandler(answer);
}

function createFastify(api: ApiOptions): FastifyInstance {
  return Fastify({
    bodyLimit: api.bodyLimitBytes,
    // Slow or half-sent requests must not hold sockets for ever (100 of them once stayed open
    // indefinitely; test/unit/control/api/hardening.test.ts). Node checks these timeouts every
    // connectionsCheckingInterval (30 s by default), which would stretch a 10 s headers timeout to 40 s.
    http: {
      headersTimeout: api.headersTimeoutMs,
      requestTimeout: api.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, api.headersTimeoutMs),
    },
    requestTimeout: api.requestTimeoutMs,
    connectionTimeout: api.idleTimeoutMs,
    genReqId: () => randomUUID(),
    // Fastify's own request logging is off: this server logs method, route, status and time itself,
    // never headers, so tokens and signatures cannot reach the log.
    logController: new LogController({ disableRequestLogging: true }),
    // answerClosingWith503 answers in the API's own error shape; fastify's would be another.
    return503OnClosing: false,
    // DynamoDB table names run to 255 characters; find-my-way's default cap is 100.
    routerOptions: { maxParamLength: 1024 },
    // URL errors found by the router (bad percent-encoding, oversized parameter) get the same body shape.
    frameworkErrors: (err, _request, reply) => {
      const status = typeof err.statusCode === 'number' ? err.statusCode : 400;
      void (reply as unknown as FastifyReply)
        .status(status)
        .send({ error: 'bad-request', message: boundMessage(`url: ${err.message}`) });
    },
  });
}

/**
 * Over api.maxConnections a burst is told to come back (503 + Retry-After, then the connection is closed), which a
 * client retries, instead of a reset it may not (1,000 concurrent connections got ~70 % resets before it;
 * test/unit/control/api/hardening.test.ts). Only past OVER_CAP_FACTOR times the cap, where answering would itself
 * cost too much, are connections dropped at once.
 */
function answerOverCapWith503(app: FastifyInstance, api: ApiOptions): void {
  app.server.maxConnections = api.maxConnections * OVER_CAP_FACTOR;
  let openConnections = 0;
  app.server.on('connection', (socket: Socket) => {
    openConnections++;
    socket.once('close', () => openConnections--);
  });
  app.addHook('onRequest', async (request, reply) => {
    if (openConnections <= api.maxConnections || request.url === '/healthz') return;
    reply.header('retry-after', String(OVER_CAP_RETRY_AFTER_S)).header('connection', 'close');
    return reply.code(503).send({
      error: 'unavailable',
      message: `more than ${api.maxConnections} open connections (api.maxConnections); retry after ${OVER_CAP_RETRY_AFTER_S} s`,
    });
  });
}

/**
 * A request that arrives while the server closes (on a kept-alive connection) is told to go elsewhere, in the shape
 * of every other error, and its connection is closed.
 */
function answerClosingWith503(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close').header('retry-after', String(OVER_CAP_RETRY_AFTER_S));
    return reply.code(503).send({ error: 'unavailable', message: 'the server is shutting down; retry' });
  });
}

/**
 * fastify's JSON parser reports a __proto__ key as invalid JSON; ours names it (control/api/json-body.ts).
 * The AWS-compatible endpoint reads raw bytes in its own scope and uses the same check.
 */
function parseJsonNamingForbiddenKeys(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    // fastify's own error shape (code, statusCode), so restErrorHandler answers as for fastify's parser.
    const fail = (code: string, message: string): void =>
      done(Object.assign(new Error(message), { code, statusCode: 400 }), undefined);
    if (body === '')
      return fail(
        'FST_ERR_CTP_EMPTY_JSON_BODY',
        "Body cannot be empty when content-type is set to 'application/json'",
      );
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      if (err instanceof ForbiddenKeyError) done(err, undefined);
      else fail('FST_ERR_CTP_INVALID_JSON_BODY', (err as Error).message);
    }
  });
}

/** What every route gets: the deps, the authentication of reads and writes, and a route label for the log. */
function routeContext(
  deps: ApiDeps,
  log: ApiDeps['logger'],
  routeLabels: WeakMap<FastifyRequest, string>,
): RouteContext {
  const { options } = deps;
  const bearer = new BearerTokens(options.tokens);
  const writers = new WeakMap<FastifyRequest, string>();
  const readers = new WeakMap<FastifyRequest, { anonymous: boolean }>();
  const readAccess = (request: FastifyRequest): { anonymous: boolean } => {
    const authorization = request.headers.authorization;
    // Open reads still reject a credential that is present but wrong: a caller should learn that.
    if (options.openReads && authorization === undefined) return { anonymous: true };
    bearer.authenticate(authorization);
    return { anonymous: false };
  };
  return {
    ...deps,
    logger: log,
    bearer,
    authenticateRead: async (request) => {
      readers.set(request, readAccess(request));
    },
    authorizeRead(request) {
      return readers.get(request) ?? readAccess(request);
    },
    authenticateWrite: async (request) => {
      writers.set(request, bearer.authenticate(request.headers.authorization));
    },
    authorizeWrite(request) {
      return writers.get(request) ?? bearer.authenticate(request.headers.authorization);
    },
    labelRoute(request, label) {
      routeLabels.set(request, label);
    },
  };
}

/** One log line and one `api_requests` count per response: method, route, status and time, never headers. */
function logAndCountResponses(
  app: FastifyInstance,
  log: ApiDeps['logger'],
  routeLabels: WeakMap<FastifyRequest, string>,
): void {
  app.addHook('onResponse', async (request, reply) => {
    const route =
      routeLabels.get(request) ??
      (request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : 'unmatched');
    const status = String(reply.statusCode);
    metrics.apiRequests.inc({ route, status });
    log.info(
      {
        reqId: request.id,
        method: request.method,
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });
}

export { UnauthorizedError };
