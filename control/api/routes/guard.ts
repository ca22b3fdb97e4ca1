import type { FastifyPluginAsync } from 'fastify';
import { cancelGuard, confirmGuard, getGuard } from '../../../pipeline/guard/actions';
import { withoutIdentities } from '../anonymous';
import type { RouteContext } from '../context';
import { parseInput as parse } from '../errors';
import { TableParamsSchema } from '../schemas';

/**
 * The mass-deletion guard's operator routes (the same operations as `ttlstream guard ...`):
 * - GET  /tables/:table/guard          state, reason and audit fields
 * - POST /tables/:table/guard/confirm  resume deletions; the guard stays quiet for this episode
 * - POST /tables/:table/guard/cancel   discard the pending marks, keep the table paused until confirm
 * POSTs need a bearer token, like every mutating route; unknown tables are 404.
 */
export const guardRoutes: FastifyPluginAsync<RouteContext> = async (app, ctx) => {
  const deps = { config: ctx.config, ddb: ctx.ddb };

  app.get('/tables/:table/guard', async (request) => {
    const { anonymous } = ctx.authorizeRead(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    await ctx.store.describe(table); // NotFoundError → 404 for a table that does not exist
    const guard = await getGuard(deps, table);
    return anonymous ? withoutIdentities(guard) : guard;
  });

  app.post('/tables/:table/guard/confirm', { onRequest: ctx.authenticateWrite }, async (request) => {
    const by = ctx.authorizeWrite(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    await ctx.store.describe(table);
    ctx.logger.warn({ table, by }, 'mass-deletion guard confirmed by operator');
    return confirmGuard(deps, table, by);
  });

  app.post('/tables/:table/guard/cancel', { onRequest: ctx.authenticateWrite }, async (request) => {
    const by = ctx.authorizeWrite(request);
    const { table } = parse('params', TableParamsSchema, request.params);
    await ctx.store.describe(table);
    ctx.logger.warn({ table, by }, 'mass-deletion guard cancelled by operator');
    return cancelGuard(deps, table, by);
  });
};
