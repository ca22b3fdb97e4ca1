import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { withoutIdentities } from '../anonymous';
import type { RouteContext } from '../context';
import { TableListSchema, TtlDescriptionSchema, errorResponses, json } from '../responses';
import { PutTtlBodySchema, TableParamsSchema } from '../schemas';

/** What a fuzzer or a client may call next on the table a PUT just changed (OpenAPI links). */
const TABLE_LINKS = {
  GetTableTtl: {
    operationId: 'getTableTtl',
    parameters: { table: '$request.path.table' },
    description: 'The description of the table just changed.',
  },
  PreviewExpiring: {
    operationId: 'previewExpiring',
    parameters: { table: '$request.path.table' },
    description: 'What the new settings would delete.',
  },
  GetGuard: {
    operationId: 'getGuard',
    parameters: { table: '$request.path.table' },
    description: "The table's mass-deletion guard.",
  },
  ConfirmGuard: {
    operationId: 'confirmGuard',
    parameters: { table: '$request.path.table' },
    description: 'Resume deletions on the table, when its guard paused it.',
  },
  CancelGuard: {
    operationId: 'cancelGuard',
    parameters: { table: '$request.path.table' },
    description: "Discard the table's pending marks, when its guard paused it.",
  },
};

/** The REST face of the settings store (the read-only expiry preview is in preview.ts). */
export const tablesRoutes: FastifyPluginAsync<RouteContext> = async (plain, ctx) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const read = { onRequest: ctx.authenticateRead };

  app.get(
    '/tables',
    {
      ...read,
      schema: {
        operationId: 'listTables',
        tags: ['tables'],
        summary: 'Every table and its TTL status',
        description:
          "Every table of the DynamoDB API (ListTables, paginated) except ttlstream's own, of any deployment.",
        response: {
          200: json('The tables.', TableListSchema),
          ...errorResponses(401, 500, 503),
        },
      },
    },
    async (request) => {
      const { anonymous } = ctx.authorizeRead(request);
      const tables = await ctx.store.list();
      return { tables: anonymous ? tables.map(withoutIdentities) : tables };
    },
  );

  app.get(
    '/tables/:table/ttl',
    {
      ...read,
      schema: {
        operationId: 'getTableTtl',
        tags: ['tables'],
        summary: "A table's TTL status and settings",
        params: TableParamsSchema,
        response: {
          200: json('The TTL description.', TtlDescriptionSchema),
          ...errorResponses(400, 401, 404, 500, 503),
        },
      },
    },
    async (request) => {
      const { anonymous } = ctx.authorizeRead(request);
      const description = await ctx.store.describe(request.params.table);
      return anonymous ? withoutIdentities(description) : description;
    },
  );

  // Authenticated in onRequest, before the body is read: an anonymous caller gets 401 whatever it sends.
  app.put(
    '/tables/:table/ttl',
    {
      onRequest: ctx.authenticateWrite,
      schema: {
        operationId: 'putTableTtl',
        tags: ['tables'],
        summary: 'Enable, change or disable TTL on a table',
        description:
          'Rules (control/README.md): a change while ENABLING or DISABLING is refused (409); enabling an ENABLED ' +
          'table with identical settings changes nothing; another mode or attribute needs TTL disabled first ' +
          '(409); other parameters change in place.',
        params: TableParamsSchema,
        body: PutTtlBodySchema,
        response: {
          200: json('The TTL description after the change.', TtlDescriptionSchema),
          ...errorResponses(400, 401, 404, 409, 413, 415, 500, 503),
        },
      },
      links: { 200: TABLE_LINKS },
    },
    async (request) => {
      const by = ctx.authorizeWrite(request);
      return ctx.store.update(request.params.table, request.body, by);
    },
  );
};
