import { z } from 'zod';
import { TableTtlSettingsSchema } from '../../policy/settings';

/**
 * The REST API's request schemas: the routes validate with them (control/api/validation.ts) and the OpenAPI
 * document is generated from them (control/api/openapi.ts), so neither can drift from the other. Response shapes
 * are in responses.ts.
 */

/** DynamoDB's table-name rule (dynalite and DynamoDB both need at least 3 characters). */
export const TableNameSchema = z
  .string()
  .min(3, 'table names are at least 3 characters')
  .max(255, 'table names are at most 255 characters')
  .regex(/^[a-zA-Z0-9_.-]+$/, 'table names contain only a-z, A-Z, 0-9, "_", "-" and "."')
  .meta({ description: 'A DynamoDB table name.', examples: ['orders'] });

export const TableParamsSchema = z.object({ table: TableNameSchema });

/** The settings as a PUT body carries them; a component of the document of its own. */
export const TtlSettingsSchema = TableTtlSettingsSchema.meta({
  id: 'TableTtlSettings',
  description:
    "A table's TTL settings: the policy (dynamodb, cosmos or mongo mode), the legal hold, the archive retention and the expiry-index opt-in.",
});

/** PUT /tables/:table/ttl. Strict, so a misspelt field ("enable") is an error rather than ignored. */
export const PutTtlBodySchema = z
  .object({
    enabled: z.boolean({ error: (i) => (i.input === undefined ? 'required' : 'expected true or false') }),
    settings: TtlSettingsSchema.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.enabled && !body.settings) {
      ctx.addIssue({ code: 'custom', path: ['settings'], message: 'required when enabled is true' });
    }
  })
  .meta({
    id: 'PutTtlBody',
    description:
      'Enable (with settings) or disable TTL on a table. `settings` is required when `enabled` is true.',
    examples: [{ enabled: true, settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } } }],
    // The refinement above, in JSON Schema: clients and fuzzers then make bodies the server accepts.
    if: { properties: { enabled: { const: true } }, required: ['enabled'] },
    then: { required: ['settings'] },
  });

const MAX_WITHIN_SECONDS = 10 * 366 * 86_400;
export const MAX_PREVIEW_LIMIT = 100_000;

/**
 * What a whole-number query parameter looks like on the wire (an integer in its bounds), keyed by its zod schema:
 * the zod schema parses a string of digits, which z.toJSONSchema would describe as a string with a pattern.
 */
export const wireSchemas = new WeakMap<object, Record<string, unknown>>();

const integerParam = (name: string, min: number, max: number, fallback: number, description: string) => {
  const schema = z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(
      z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`),
    )
    .optional()
    .transform((v) => v ?? fallback);
  wireSchemas.set(schema, { type: 'integer', minimum: min, maximum: max, default: fallback, description });
  return schema;
};

/** GET /tables/:table/expiring?within=<seconds>&limit=<items>. */
export const ExpiringQuerySchema = z
  .object({
    within: integerParam(
      'within',
      0,
      MAX_WITHIN_SECONDS,
      3600,
      'Count items that expire within this many seconds from now (besides those expired already).',
    ),
    limit: integerParam(
      'limit',
      1,
      MAX_PREVIEW_LIMIT,
      10_000,
      'Read at most this many items (an anonymous caller: at most 1000).',
    ),
  })
  .strict();
