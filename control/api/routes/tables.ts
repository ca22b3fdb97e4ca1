import type { FastifyPluginAsync } from 'fastify';
import { ConflictError } from '../../../core/errors';
import { previewExpiring } from '../../preview';
import { OPEN_READ_PREVIEW_LIMIT, withoutIdentities } from '../anonymous';
import type { RouteContext } from '../context';
import { parseInput as parse } from '../errors';
import { ExpiringQuerySchema, PutTtlBodySchema, TableParamsSchema } from '../schemas';

/** The REST face of the settings store, plus the read-only expiry preview. */
export const tablesRoutes: FastifyPluginAsync<RouteContext> = async (app, ctx) => {
  app.get('/tables', async (request) => {
    const { anonymous } = ctx.authorizeRead(request);
    const tables = await ctx.store.list();
    return { tables: anonymous ? tables.map(withoutIdentities) : tables };
  });

  app.get('/tables/:table/ttl', async (request) => {
    const { anonymous } = ctx.authorizeRead(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    const description = await ctx.store.describe(table);
    return anonymous ? withoutIdentities(description) : description;
  });

  // Authenticated in onRequest, before the body is read: an anonymous caller gets 401 whatever it sends.
  app.put('/tables/:table/ttl', { onRequest: ctx.authenticateWrite }, async (request) => {
    const by = ctx.authorizeWrite(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    const body = parse('body', PutTtlBodySchema, request.body);
    return ctx.store.update(table, body, by);
  });

  app.get('/tables/:table/expiring', async (request) => {
    const { anonymous } = ctx.authorizeRead(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    const query = parse('query', ExpiringQuerySchema, request.query);
    const description = await ctx.store.describe(table);
    if (!description.settings) {
      throw new ConflictError(
        `TimeToLive is ${description.status} on table ${table}: the preview evaluates items with the table's TTL settings, so enable TTL first`,
      );
    }
    const preview = await previewExpiring(ctx.ddb, table, description.settings, {
      withinSeconds: query.within,
      limit: anonymous ? Math.min(query.limit, OPEN_READ_PREVIEW_LIMIT) : query.limit,
      nowMs: Date.now(),
    });
    if (!anonymous) return preview;
    const { sampleKeys: _keys, ...counts } = preview;
    return counts;
  });
};
