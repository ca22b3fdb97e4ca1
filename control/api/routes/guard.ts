import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { cancelGuard, confirmGuard, getGuard } from '../../../pipeline/guard/actions';
import { withoutIdentities } from '../anonymous';
import type { RouteContext } from '../context';
import { GuardCancelSchema, GuardSchema, errorResponses, json } from '../responses';
import { TableParamsSchema } from '../schemas';

/**
 * The mass-deletion guard's operator routes (the same operations as `ttlstream guard ...`):
 * - GET  /tables/:table/guard          state, reason and audit fields
 * - POST /tables/:table/guard/confirm  resume deletions; the guard stays quiet for this episode
 * - POST /tables/:table/guard/cancel   discard the pending marks, keep the table paused until confirm
 * POSTs need a bearer token, like every mutating route; unknown tables are 404.
 */
export const guardRoutes: FastifyPluginAsync<RouteContext> = async (plain, ctx) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const deps = { ddb: ctx.ddb, options: ctx.options.guard };
  // A POST has no body, but one sent is still parsed (and refused when too large, not JSON or of another type);
  // 409: the table is not paused.
  const actionErrors = errorResponses(400, 401, 404, 409, 413, 415, 500, 503);

  app.get(
    '/tables/:table/guard',
    {
      onRequest: ctx.authenticateRead,
      schema: {
        operationId: 'getGuard',
        tags: ['guard'],
        summary: "The table's mass-deletion guard",
        params: TableParamsSchema,
        response: {
          200: json('The guard.', GuardSchema),
          ...errorResponses(400, 401, 404, 500, 503),
        },
      },
    },
    async (request) => {
      const { anonymous } = ctx.authorizeRead(request);
      const { table } = request.params;
      await ctx.store.describe(table); // NotFoundError → 404 for a table that does not exist
      const guard = await getGuard(deps, table);
      return anonymous ? withoutIdentities(guard) : guard;
    },
  );

  app.post(
    '/tables/:table/guard/confirm',
    {
      onRequest: ctx.authenticateWrite,
      schema: {
        operationId: 'confirmGuard',
        tags: ['guard'],
        summary: 'Resume deletions on a paused table',
        description: 'The guard stays quiet for this episode. No body.',
        params: TableParamsSchema,
        response: { 200: json('The guard after the confirm.', GuardSchema), ...actionErrors },
      },
    },
    async (request) => {
      const by = ctx.authorizeWrite(request);
      const { table } = request.params;
      await ctx.store.describe(table);
      ctx.logger.warn({ table, by }, 'mass-deletion guard confirmed by operator');
      return confirmGuard(deps, table, by);
    },
  );

  app.post(
    '/tables/:table/guard/cancel',
    {
      onRequest: ctx.authenticateWrite,
      schema: {
        operationId: 'cancelGuard',
        tags: ['guard'],
        summary: "Discard a paused table's pending marks",
        description: 'The table stays paused until a confirm. No body.',
        params: TableParamsSchema,
        response: {
          200: json('The guard after the cancel, and the marks discarded.', GuardCancelSchema),
          ...actionErrors,
        },
      },
    },
    async (request) => {
      const by = ctx.authorizeWrite(request);
      const { table } = request.params;
      await ctx.store.describe(table);
      ctx.logger.warn({ table, by }, 'mass-deletion guard cancelled by operator');
      return cancelGuard(deps, table, by);
    },
  );
};
