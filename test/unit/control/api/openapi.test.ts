import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { openApiDocumentText } from '../../../../control/api/document';
import { OPEN_PATHS } from '../../../../control/api/openapi';
import { ApiErrorSchema, ERROR_CODES } from '../../../../control/api/responses';
import { cli } from '../../../support/cli';
import { apiWithoutDatabase, http } from '../../../support/control-api';

const TOKEN = 'unit-token-0123456789abcdef';
const KEY = { accessKeyId: 'AKIDUNIT', secretAccessKey: 'unit-secret-abcdefghijklmnop' };

interface Operation {
  operationId?: string;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string }>;
  responses: Record<string, { content?: Record<string, unknown>; links?: Record<string, unknown> }>;
}
type Document = {
  openapi: string;
  info: { description: string };
  paths: Record<string, Record<string, Operation>>;
  security: unknown[];
};

describe('the OpenAPI document of the control plane', () => {
  let generated: string;
  let doc: Document;
  beforeAll(async () => {
    generated = await openApiDocumentText();
    doc = JSON.parse(generated) as Document;
  });

  it('docs/openapi.json is the generated document (run `npm run docs:contracts` if this fails)', () => {
    const committed = readFileSync(resolve(__dirname, '../../../../docs/openapi.json'), 'utf8');
    expect(committed).toBe(generated);
  });

  it('`ttlstream api openapi` prints it', async () => {
    const r = await cli(['api', 'openapi']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(generated);
  });

  it('is OpenAPI 3.1 with a bearer scheme required by default, and says where the AWS endpoint is described', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.info.description).toContain("AWS's own DynamoDB API model");
    expect(doc.paths['/']).toBeUndefined();
  });

  it('open operations are exactly /healthz, /readyz, /metrics and /openapi.json', () => {
    const open = Object.entries(doc.paths)
      .filter(([, item]) => Object.values(item).some((op) => op.security?.length === 0))
      .map(([path]) => path);
    expect(open.sort()).toEqual([...OPEN_PATHS].sort());
    for (const [path, item] of Object.entries(doc.paths))
      if (!(OPEN_PATHS as readonly string[]).includes(path))
        for (const op of Object.values(item)) {
          expect(op.security).toBeUndefined(); // the document's default: bearer
          expect(op.responses['401']).toBeDefined();
        }
  });

  it('every operation has an id, a 2xx answer, 500 and 503, and every answer has a body schema', () => {
    for (const item of Object.values(doc.paths))
      for (const op of Object.values(item)) {
        expect(op.operationId).toMatch(/^[a-z][A-Za-z]+$/);
        expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '500', '503']));
        for (const response of Object.values(op.responses)) expect(response.content).toBeDefined();
      }
  });

  it('links a PUT of a table to the GETs of the same table (stateful testing)', () => {
    const links = doc.paths['/tables/{table}/ttl']?.put?.responses['200']?.links ?? {};
    expect(Object.values(links)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ operationId: 'getTableTtl', parameters: { table: '$request.path.table' } }),
      ]),
    );
    const ids = new Set(
      Object.values(doc.paths).flatMap((item) => Object.values(item).map((o) => o.operationId)),
    );
    for (const link of Object.values(links) as Array<{ operationId: string }>)
      expect(ids.has(link.operationId)).toBe(true);
  });
});

describe('the served document and the routes', () => {
  let app: FastifyInstance;
  let base: string;
  let generated: unknown;
  beforeAll(async () => {
    ({ app, base } = await apiWithoutDatabase(TOKEN, KEY));
    generated = JSON.parse(await openApiDocumentText());
  });
  afterAll(() => app.close());

  it('GET /openapi.json serves the generated document, without a token', async () => {
    const res = await http(base, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json()).toEqual(generated);
  });

  it("documents every REST route (the AWS-compatible POST / is left to AWS's model)", async () => {
    const doc = (await http(base, 'GET', '/openapi.json')).json() as Document;
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    for (const route of documented) {
      const [method, path] = route.split(' ') as [string, string];
      expect(app.hasRoute({ method, url: path })).toBe(true);
    }
    expect(documented.sort()).toEqual(
      [
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'GET /tables',
        'GET /tables/:table/ttl',
        'PUT /tables/:table/ttl',
        'GET /tables/:table/expiring',
        'GET /tables/:table/guard',
        'POST /tables/:table/guard/confirm',
        'POST /tables/:table/guard/cancel',
        'GET /openapi.json',
      ].sort(),
    );
  });

  it('error answers have the documented body and a code listed for their status', async () => {
    const cases: Array<[string, string, Record<string, string>, string | undefined, number]> = [
      ['GET', '/tables', {}, undefined, 401],
      ['GET', '/tables/ab/ttl', { authorization: `Bearer ${TOKEN}` }, undefined, 400],
      [
        'PUT',
        '/tables/orders/ttl',
        { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/xml' },
        '<x/>',
        415,
      ],
      ['GET', '/readyz', {}, undefined, 503],
    ];
    for (const [method, path, headers, body, status] of cases) {
      const res = await http(base, method, path, { headers, ...(body !== undefined ? { body } : {}) });
      expect(res.status).toBe(status);
      const parsed = ApiErrorSchema.parse(res.json());
      expect(ERROR_CODES[status as keyof typeof ERROR_CODES] as readonly string[]).toContain(parsed.error);
    }
  });
});
