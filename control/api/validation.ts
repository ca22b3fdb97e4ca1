import type { FastifyInstance, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import type { ZodType } from 'zod';
import { ValidationError } from '../../core/errors';
import { formatZodError } from './errors';

/** Where a value came from, as the error message names it: `query.limit: ...`. */
const WHERE: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'params',
  headers: 'headers',
};

/**
 * Validates request input with the route's zod schemas (the same schemas the OpenAPI document is made of). A
 * failure is a ValidationError naming the field (`body.settings.policy.attributeName: ...`), which the REST error
 * handler answers 400 validation-error. fastify hands a missing body as null: validated as absent, so the message
 * says "received undefined", not "null", for a request that sent nothing.
 */
const validatorCompiler: FastifySchemaCompiler<ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const where = WHERE[httpPart ?? 'body'] ?? 'request';
    const result = schema.safeParse(where === 'body' && data === null ? undefined : data);
    return result.success
      ? { value: result.data }
      : { error: new ValidationError(formatZodError(where, result.error)) };
  };

/**
 * Answers are serialized as they are: the response schemas describe them (document, client types, the compiler's
 * check of each handler), and the tests check the answers against the document (schemathesis's
 * response_schema_conformance), rather than turning a mismatch into a 500 at run time.
 */
const serializerCompiler: FastifySerializerCompiler<ZodType> = () => (data) => JSON.stringify(data);

export function useZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
}
