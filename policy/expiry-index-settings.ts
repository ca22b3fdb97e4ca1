import { z } from 'zod';

/**
 * The expiry index's opt-in (see expiry-index.ts), part of a table's TTL settings. Apart from the index's logic
 * because settings.ts embeds this schema and that logic reads the settings: one file would import the other both ways.
 */

export const DEFAULT_EXPIRY_SHARDS = 16;
/** One Query per shard per poll: beyond a few hundred shards the polls cost more than they spread. */
export const MAX_EXPIRY_SHARDS = 256;

/** The opt-in, part of a table's TTL settings: `{ expiryIndex: { shards: 16 } }`. */
export const ExpiryIndexSettingsSchema = z
  .object({
    shards: z.number().int().min(1).max(MAX_EXPIRY_SHARDS).default(DEFAULT_EXPIRY_SHARDS),
  })
  .strict();
export type ExpiryIndexSettings = z.infer<typeof ExpiryIndexSettingsSchema>;
