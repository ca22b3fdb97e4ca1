import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import type { FastifyPluginAsync } from 'fastify';
import type { RouteContext } from '../context';

const READY_TIMEOUT_MS = 2000;

/** Liveness and readiness: always open, they reveal nothing but up/down. */
export const healthRoutes: FastifyPluginAsync<RouteContext> = async (app, ctx) => {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    try {
      await ctx.ddb.send(new ListTablesCommand({ Limit: 1 }), {
        abortSignal: AbortSignal.timeout(READY_TIMEOUT_MS),
      });
      return { status: 'ready' };
    } catch (err) {
      const name = err instanceof Error ? err.name : 'error';
      return reply.status(503).send({ error: 'not-ready', message: `DynamoDB API unreachable (${name})` });
    }
  });
};
