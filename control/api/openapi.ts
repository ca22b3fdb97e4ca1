import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { VERSION } from '../../core/version';
import { wireSchemas } from './schemas';

/** Where the server answers with its own OpenAPI document. */
export const OPENAPI_PATH = '/openapi.json';

/** The operations anyone may call: everything else needs a bearer token (the unauthenticated schemathesis run). */
export const OPEN_PATHS = ['/healthz', '/readyz', '/metrics', OPENAPI_PATH] as const;

/** The bearer security scheme's name in the document. */
export const BEARER = 'bearer';

const DESCRIPTION = [
  "The REST API of ttlstream's control plane (`ttlstream run --roles api`): per-table TTL settings, the expiry",
  'preview and the mass-deletion guard, plus health, readiness and metrics. Generated from the zod schemas the',
  'server validates requests with (`GET /openapi.json`, `ttlstream api openapi`), so it cannot drift from them.',
  '',
  'Every operation but /healthz, /readyz, /metrics and /openapi.json needs a bearer token (`api.tokens`). With',
  '`api.openReads` the GET operations also answer without one; such an anonymous answer carries no item keys',
  '(`sampleKeys`) and no audit identities (fields ending in `By`), and a preview scans at most 1000 items.',
  'Every error has the body `{ error, message }`, `error` a stable code.',
  '',
  'Not described here: the DynamoDB-compatible endpoint at `POST /` (`X-Amz-Target:',
  'DynamoDB_20120810.UpdateTimeToLive` and `.DescribeTimeToLive`, awsJson1_0, SigV4). It keeps the shapes of',
  "AWS's own DynamoDB API model, which describes it, and the AWS SDKs and CLI are its clients.",
].join('\n');

/** The AWS-compatible endpoint, named for machines too, as described elsewhere. */
const AWS_ENDPOINT_EXTENSION = 'x-ttlstream-aws-compatible-endpoint';
const AWS_ENDPOINT = {
  path: '/',
  method: 'POST',
  protocol: 'awsJson1_0',
  targets: ['DynamoDB_20120810.UpdateTimeToLive', 'DynamoDB_20120810.DescribeTimeToLive'],
  describedBy: "AWS's DynamoDB API model (service DynamoDB_20120810)",
};

/** Extra answer headers, by status: fastify's type provider keeps only the body of a response declared by content. */
const RESPONSE_HEADERS: Record<string, Record<string, unknown>> = {
  '401': {
    'WWW-Authenticate': {
      description: 'The bearer challenge: `Bearer realm="ttlstream"`.',
      schema: { type: 'string' },
    },
  },
  '503': {
    'Retry-After': {
      description:
        'Seconds to wait before trying again: with `unavailable` (the DynamoDB API down or throttling, too many connections, a server shutting down).',
      schema: { type: 'integer', minimum: 0 },
    },
  },
};

type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every `$ref` target under `node`. */
function refsIn(node: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const v of node) refsIn(v, out);
  else if (isObject(node))
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else refsIn(v, out);
    }
  return out;
}

/**
 * Components no operation refers to are left out: the type provider emits each registered schema on both the input
 * and the output side (`TableTtlSettingsInput`, `TableTtlSettings`), whichever the routes use.
 */
function dropUnusedSchemas(document: JsonObject): void {
  const components = isObject(document.components) ? document.components : {};
  const schemas = isObject(components.schemas) ? components.schemas : {};
  const used = new Set<string>();
  let frontier = refsIn(document.paths, new Set());
  while (frontier.size > 0) {
    const next = new Set<string>();
    for (const ref of frontier) {
      const name = ref.replace('#/components/schemas/', '');
      if (used.has(name)) continue;
      used.add(name);
      refsIn(schemas[name], next);
    }
    frontier = next;
  }
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
}

function addResponseHeaders(document: JsonObject): void {
  for (const item of Object.values(isObject(document.paths) ? document.paths : {}))
    for (const operation of Object.values(isObject(item) ? item : {})) {
      const responses = isObject(operation) && isObject(operation.responses) ? operation.responses : {};
      for (const [status, headers] of Object.entries(RESPONSE_HEADERS)) {
        const response = responses[status];
        if (isObject(response)) response.headers = headers;
      }
    }
}

/** The document as the type provider made it, finished: unused components out, headers and the extension in. */
function finish<D extends object>(document: D): D {
  const json: JsonObject = Object.assign(document, { [AWS_ENDPOINT_EXTENSION]: AWS_ENDPOINT });
  dropUnusedSchemas(json);
  addResponseHeaders(json);
  return document;
}

/**
 * The whole-number query parameters parse a string of digits; on the wire they are integers in their bounds
 * (control/api/schemas.ts wireSchemas).
 */
const zodToJsonConfig = {
  override(ctx: { zodSchema: object; jsonSchema: JsonObject }) {
    const wire = wireSchemas.get(ctx.zodSchema);
    if (!wire) return;
    for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
    Object.assign(ctx.jsonSchema, wire);
  },
};

const transformObject = createJsonSchemaTransformObject({ zodToJsonConfig });

/**
 * Registers @fastify/swagger, which collects every route registered after it: each route's zod schemas become its
 * parameters, request body and answers (fastify-type-provider-zod's transform, z.toJSONSchema underneath).
 */
export function registerOpenApi(app: FastifyInstance): void {
  app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'ttlstream control plane',
        version: VERSION,
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      tags: [
        { name: 'tables', description: 'TTL settings and the expiry preview, per table' },
        { name: 'guard', description: 'The mass-deletion guard: state, confirm, cancel' },
        { name: 'operations', description: 'Health, readiness, metrics and this document' },
      ],
      components: {
        securitySchemes: {
          [BEARER]: {
            type: 'http',
            scheme: 'bearer',
            description: 'One of `api.tokens` (TTLSTREAM_API_TOKENS), at least 16 characters.',
          },
        },
      },
      security: [{ [BEARER]: [] }],
    },
    transform: createJsonSchemaTransform({ skipList: [], zodToJsonConfig }),
    transformObject: (document) => finish(transformObject(document)),
  });
}
