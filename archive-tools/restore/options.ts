import { z } from 'zod';
import { ValidationError } from '../../core/errors';
import { TABLE_NAME_PATTERN } from '../../schemas';

const tableName = z.string().regex(TABLE_NAME_PATTERN, 'table names are 3-255 of A-Z a-z 0-9 _ - .');
const epochMs = z.number().int().nonnegative().max(253_402_300_799_999);

/** Cosmos DB caps an item ttl at 2147483647 s, and 0 is not a valid item ttl: 1 s is the shortest extension. */
export const ExtendSchema = z.object({ extendSeconds: z.number().int().min(1).max(2_147_483_647) }).strict();

export const RestoreTtlModeSchema = z.union([z.literal('keep'), z.literal('remove'), ExtendSchema]);

/**
 * What to restore and how. The contract the CLI (`ttlstream restore`) and the API call with; the
 * progress callback is passed beside it, since a function is not data.
 */
export const RestoreOptionsSchema = z
  .object({
    /** The table whose deleted items are wanted (the archive's `table=` directory). */
    table: tableName,
    /** Where to write them; the original table when absent. Needs the same key attributes. */
    targetTable: tableName.optional(),
    /** One item: DynamoDB JSON of its key, as an object or a JSON string. */
    key: z.union([z.string().min(2), z.record(z.string(), z.record(z.string(), z.unknown()))]).optional(),
    /** Items whose hash-key value (S, N as written, B as base64) starts with this. */
    keyPrefix: z.string().min(1).optional(),
    /** Deletions at or after this instant (epoch ms). */
    fromMs: epochMs.optional(),
    /** Deletions before this instant (epoch ms). */
    toMs: epochMs.optional(),
    ttl: RestoreTtlModeSchema.default('remove'),
    /** The TTL attribute when the table's TTL settings are not known (DynamoDB semantics). */
    ttlAttribute: z.string().min(1).max(255).optional(),
    /** Replace items that exist now; off by default, so a restore never clobbers newer data. */
    overwrite: z.boolean().default(false),
    /** Read and report what would be written; write nothing. */
    dryRun: z.boolean().default(false),
    /** Writes in flight. */
    concurrency: z.number().int().min(1).max(256).default(16),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.key !== undefined && o.keyPrefix !== undefined)
      ctx.addIssue({ code: 'custom', message: 'give key or keyPrefix, not both', path: ['keyPrefix'] });
    if (o.fromMs !== undefined && o.toMs !== undefined && o.fromMs > o.toMs)
      ctx.addIssue({ code: 'custom', message: 'fromMs is after toMs', path: ['fromMs'] });
  });

export type RestoreOptionsInput = z.input<typeof RestoreOptionsSchema>;
export type RestoreOptions = z.output<typeof RestoreOptionsSchema>;

/** Parse with zod; the first problem becomes a ValidationError naming the option. */
export function parseOptions<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  throw new ValidationError(`${what} options: ${where}${issue?.message ?? 'invalid'}`);
}
