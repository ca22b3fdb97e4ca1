import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { registry } from '../../../core/metrics';
import type { RouteContext } from '../context';
import { errorResponses } from '../responses';

/**
 * Prometheus text exposition of the process registry. Always open, like health and readiness:
 * scrapers rarely carry credentials, and no label value comes from request input (core/metrics.ts
 * bounds the table label), so it reveals counts of known tables only.
 */
export const metricsRoutes: FastifyPluginAsync<RouteContext> = async (plain) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'metrics',
        tags: ['operations'],
        summary: 'Prometheus metrics (text exposition format 0.0.4)',
        security: [],
        response: {
          200: {
            description: 'The process registry, `ttlstream_*` series.',
            content: { 'text/plain': { schema: z.string() } },
          },
          ...errorResponses(500, 503),
        },
      },
    },
    async (_request, reply) => {
      const body = await registry.metrics();
      return reply.type(registry.contentType).send(body);
    },
  );
};
