import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteContext } from '../context';
import { OPENAPI_PATH } from '../openapi';
import { errorResponses, json } from '../responses';

/** The server's own OpenAPI document (control/api/openapi.ts), open like health: it holds no data. */
export const openApiRoutes: FastifyPluginAsync<RouteContext> = async (plain) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        operationId: 'openApiDocument',
        tags: ['operations'],
        summary: 'This document (OpenAPI 3.1)',
        security: [],
        response: {
          200: json('The OpenAPI document.', z.looseObject({ openapi: z.string() })),
          ...errorResponses(500, 503),
        },
      },
    },
    async () => ({ openapi: '3.1.0', ...app.swagger() }),
  );
};
