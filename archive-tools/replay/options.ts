import { z } from 'zod';
import { ENCODINGS, TABLE_NAME_PATTERN } from '../../schemas';

const epochMs = z.number().int().nonnegative().max(253_402_300_799_999);

/** What to replay and where; the CLI (`ttlstream replay`) and the API call with this. */
export const ReplayOptionsSchema = z
  .object({
    table: z.string().regex(TABLE_NAME_PATTERN, 'table names are 3-255 of A-Z a-z 0-9 _ - .'),
    /** Deletions at or after this instant (epoch ms). */
    fromMs: epochMs,
    /** Deletions before this instant (epoch ms). */
    toMs: epochMs,
    /** The caller's topic; it must exist (replay never creates topics). */
    topic: z
      .string()
      .min(1)
      .max(249)
      .regex(/^[A-Za-z0-9._-]+$/, 'Kafka topic names are 1-249 of A-Z a-z 0-9 . _ -'),
    encoding: z.enum(ENCODINGS as ['avro', 'json']),
    /** Messages per produce request. */
    batchSize: z.number().int().min(1).max(10_000).default(500),
  })
  .strict()
  .refine((o) => o.fromMs <= o.toMs, { message: 'fromMs is after toMs', path: ['fromMs'] });

export type ReplayOptionsInput = z.input<typeof ReplayOptionsSchema>;
export type ReplayOptions = z.output<typeof ReplayOptionsSchema>;
