import type { FastifyPluginAsync } from 'fastify';
import { ConflictError } from '../../../core/errors';
import { previewExpiring } from '../../preview';
import type { RouteContext } from '../context';
import { parseInput as parse } from '../errors';
import { ExpiringQuerySchema, PutTtlBodySchema, TableParamsSchema } from '../schemas';

/** The REST face of the settings store, plus the read-only expiry preview. */
export const tablesRoutes: FastifyPluginAsync<RouteContext> = async (app, ctx) => {
  app.get('/tables', async (request) => {
    ctx.authorizeRead(request);
    return { tables: await ctx.store.list() };
  });

  app.get('/tables/:table/ttl', async (request) => {
    ctx.authorizeRead(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    return ctx.store.describe(table);
  });

  app.put('/tables/:table/ttl', async (request) => {
    // Authenticate before looking at the body: an anonymous caller learns nothing about validation.
    const by = ctx.authorizeWrite(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    const body = parse('body', PutTtlBodySchema, request.body);
    return ctx.store.update(table, body, by);
  });

  app.get('/tables/:table/expiring', async (request) => {
    ctx.authorizeRead(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    const query = parse('query', ExpiringQuerySchema, request.query);
    const description = await ctx.store.describe(table);
    if (!description.settings) {
      throw new ConflictError(
        `TimeToLive is ${description.status} on table ${table}: the preview evaluates items with the table's TTL settings, so enable TTL first`,
      );
    }
    return previewExpiring(ctx.ddb, table, description.settings, {
      withinSeconds: query.within,
      limit: query.limit,
      nowMs: Date.now(),
    });
  });
};
