import type { FastifyPluginAsync } from 'fastify';
import { registry } from '../../../core/metrics';
import type { RouteContext } from '../context';

/**
 * Prometheus text exposition of the process registry. Always open, like health and readiness:
 * scrapers rarely carry credentials, and no label value comes from request input (core/metrics.ts
 * bounds the table label), so it reveals counts of known tables only.
 */
export const metricsRoutes: FastifyPluginAsync<RouteContext> = async (app) => {
  app.get('/metrics', async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
};
