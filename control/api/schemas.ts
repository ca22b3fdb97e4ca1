import { z } from 'zod';
import { TableTtlSettingsSchema } from '../../policy/settings';

/** DynamoDB's table-name rule (dynalite and DynamoDB both need at least 3 characters). */
export const TableNameSchema = z
  .string()
  .min(3, 'table names are at least 3 characters')
  .max(255, 'table names are at most 255 characters')
  .regex(/^[a-zA-Z0-9_.-]+$/, 'table names contain only a-z, A-Z, 0-9, "_", "-" and "."');

export const TableParamsSchema = z.object({ table: TableNameSchema });

/** PUT /tables/:table/ttl. Strict, so a misspelt field ("enable") is an error rather than ignored. */
export const PutTtlBodySchema = z
  .object({
    enabled: z.boolean({ error: (i) => (i.input === undefined ? 'required' : 'expected true or false') }),
    settings: TableTtlSettingsSchema.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.enabled && !body.settings) {
      ctx.addIssue({ code: 'custom', path: ['settings'], message: 'required when enabled is true' });
    }
  });

const MAX_WITHIN_SECONDS = 10 * 366 * 86_400;
export const MAX_PREVIEW_LIMIT = 100_000;

const integerParam = (name: string, min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(
      z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`),
    )
    .optional()
    .transform((v) => v ?? fallback);

/** GET /tables/:table/expiring?within=<seconds>&limit=<items>. */
export const ExpiringQuerySchema = z
  .object({
    within: integerParam('within', 0, MAX_WITHIN_SECONDS, 3600),
    limit: integerParam('limit', 1, MAX_PREVIEW_LIMIT, 10_000),
  })
  .strict();
