import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ConflictError } from '../../../core/errors';
import type { Item } from '../../../policy/types';
import { previewExpiring } from '../../preview';
import { OPEN_READ_PREVIEW_LIMIT, withoutIdentities } from '../anonymous';
import type { RouteContext } from '../context';
import { PreviewSchema, TableListSchema, TtlDescriptionSchema, errorResponses, json } from '../responses';
import { ExpiringQuerySchema, PutTtlBodySchema, TableParamsSchema } from '../schemas';

/** The REST face of the settings store, plus the read-only expiry preview. */
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
      links: {
        200: {
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
        },
      },
    },
    async (request) => {
      const by = ctx.authorizeWrite(request);
      return ctx.store.update(request.params.table, request.body, by);
    },
  );

  app.get(
    '/tables/:table/expiring',
    {
      ...read,
      schema: {
        operationId: 'previewExpiring',
        tags: ['tables'],
        summary: 'What TTL would delete now, and within a horizon',
        description:
          "Scans the table (at most `limit` items) and runs every item through the policy engine with the table's " +
          'current settings. Read-only. Needs TTL settings: a DISABLED table answers 409.',
        params: TableParamsSchema,
        querystring: ExpiringQuerySchema,
        response: {
          200: json('The preview.', PreviewSchema),
          ...errorResponses(400, 401, 404, 409, 500, 503),
        },
      },
    },
    async (request) => {
      const { anonymous } = ctx.authorizeRead(request);
      const { table } = request.params;
      const description = await ctx.store.describe(table);
      if (!description.settings) {
        throw new ConflictError(
          `TimeToLive is ${description.status} on table ${table}: the preview evaluates items with the table's TTL settings, so enable TTL first`,
        );
      }
      const preview = await previewExpiring(ctx.ddb, table, description.settings, {
        withinSeconds: request.query.within,
        limit: anonymous ? Math.min(request.query.limit, OPEN_READ_PREVIEW_LIMIT) : request.query.limit,
        nowMs: Date.now(),
      });
      const { sampleKeys, ...counts } = preview;
      return anonymous ? counts : { ...counts, sampleKeys: sampleKeys.map(keyJson) };
    },
  );
};

/** A key in DynamoDB JSON as the stream's JSON encoding writes it: a binary attribute as base64, not a byte map. */
function keyJson(key: Item): Record<string, { S: string } | { N: string } | { B: string }> {
  const out: Record<string, { S: string } | { N: string } | { B: string }> = {};
  for (const [name, v] of Object.entries(key)) {
    if (v.S !== undefined) out[name] = { S: v.S };
    else if (v.N !== undefined) out[name] = { N: v.N };
    else if (v.B !== undefined) out[name] = { B: Buffer.from(v.B).toString('base64') };
  }
  return out;
}
