import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { RouteContext } from '../context';
import { HealthSchema, ReadySchema, errorResponses, json } from '../responses';

const READY_TIMEOUT_MS = 2000;

/** Liveness and readiness: always open, they reveal nothing but up/down. */
export const healthRoutes: FastifyPluginAsync<RouteContext> = async (plain, ctx) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'health',
        tags: ['operations'],
        summary: 'Liveness: the process runs',
        security: [],
        response: { 200: json('Alive.', HealthSchema), ...errorResponses(500, 503) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'ready',
        tags: ['operations'],
        summary: 'Readiness: the DynamoDB API answers within 2 s',
        security: [],
        response: { 200: json('Ready.', ReadySchema), ...errorResponses(500, 503) },
      },
    },
    async (_request, reply) => {
      try {
        await ctx.ddb.send(new ListTablesCommand({ Limit: 1 }), {
          abortSignal: AbortSignal.timeout(READY_TIMEOUT_MS),
        });
        return { status: 'ready' as const };
      } catch (err) {
        const name = err instanceof Error ? err.name : 'error';
        return reply.status(503).send({ error: 'not-ready', message: `DynamoDB API unreachable (${name})` });
      }
    },
  );
};
