import type { FastifyPluginAsync } from 'fastify';
import { registry } from '../../../core/metrics';
import type { RouteContext } from '../context';

/** Prometheus text exposition of the process registry; a read, so open when api.openReads is true. */
export const metricsRoutes: FastifyPluginAsync<RouteContext> = async (app, ctx) => {
  app.get('/metrics', async (request, reply) => {
    ctx.authorizeRead(request);
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
};
