import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ConflictError } from '../../../core/errors';
import type { Item } from '../../../policy/types';
import { previewExpiring } from '../../preview';
import { OPEN_READ_PREVIEW_LIMIT } from '../anonymous';
import type { RouteContext } from '../context';
import { PreviewSchema, errorResponses, json } from '../responses';
import { ExpiringQuerySchema, TableParamsSchema } from '../schemas';

/** The read-only expiry preview: what TTL would delete now and within a horizon (control/preview.ts). */
export const previewRoutes: FastifyPluginAsync<RouteContext> = async (plain, ctx) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const read = { onRequest: ctx.authenticateRead };

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
