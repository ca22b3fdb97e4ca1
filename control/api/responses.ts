import { z } from 'zod';
import { DescribedTtlSettingsSchema, TtlStatusSchema } from '../../policy/settings';

/**
 * The REST API's response shapes, in zod: the routes declare them per status (the compiler checks each handler's
 * answer against them), the OpenAPI document describes them, and the typed client (client/) takes its types from
 * them. Fields ending in "By" (audit identities) are absent from an anonymous read's answer (api.openReads).
 */

const epochMs = z.number().int().min(0);
const identity = z.string().meta({
  description: '`token#<n>` or `aws:<access key id>`; absent from an anonymous read (api.openReads).',
});

export const ExpiryIndexDescriptionSchema = z
  .object({
    status: z.enum(['NONE', 'CREATING', 'BACKFILLING', 'ACTIVE', 'DELETING']),
    shards: z.number().int().min(1),
    backfilledAt: epochMs.optional(),
  })
  .meta({ description: "The expiry index's life cycle, when the settings opt into it (decision 0011)." });

/** Settings in an answer: the stored shape (the PUT body's TableTtlSettings is narrower per deleter). */
const DescribedSettingsSchema = DescribedTtlSettingsSchema.meta({
  id: 'DescribedTtlSettings',
  description:
    "A table's TTL settings as stored: the policy, the legal hold, the archive retention, the expiry-index opt-in and the deleter.",
});

export const TtlDescriptionSchema = z
  .object({
    table: z.string(),
    status: TtlStatusSchema,
    settings: DescribedSettingsSchema.nullable(),
    changedAt: epochMs.meta({ description: 'Last change (epoch ms); 0 when TTL was never configured.' }),
    changedBy: identity.optional(),
    statusSettlesAt: epochMs.meta({
      description: 'When ENABLING or DISABLING ends (epoch ms); 0 when TTL was never configured.',
    }),
    expiryIndex: ExpiryIndexDescriptionSchema.optional(),
  })
  .meta({
    id: 'TtlDescription',
    description: "A table's TTL status and settings, as DescribeTimeToLive reports it.",
  });

export const TableListSchema = z.object({ tables: z.array(TtlDescriptionSchema) }).meta({
  description: "Every table of the DynamoDB API except ttlstream's own, with its TTL status.",
});

/** A primary key in DynamoDB JSON: one or two attributes of type S, N or B (B as base64). */
const KeyJsonSchema = z.record(
  z.string(),
  z.union([
    z.object({ S: z.string() }).strict(),
    z.object({ N: z.string() }).strict(),
    z.object({ B: z.base64() }).strict(),
  ]),
);

export const PreviewSchema = z
  .object({
    table: z.string(),
    evaluatedAt: epochMs,
    withinSeconds: z.number().int().min(0),
    scanned: z.number().int().min(0),
    expiredNow: z.number().int().min(0).meta({ description: 'Items a pass right now would delete.' }),
    expiringWithin: z
      .number()
      .int()
      .min(0)
      .meta({ description: 'Items not expired yet that expire within `withinSeconds`.' }),
    sampleKeys: z.array(KeyJsonSchema).max(10).optional().meta({
      description:
        'Keys of up to 10 items among expiredNow and expiringWithin, in scan order; absent from an anonymous read.',
    }),
    ignored: z.object({
      'wrong-type': z.number().int().min(0),
      'older-than-5-years': z.number().int().min(0),
      malformed: z.number().int().min(0),
      'item-ttl-null': z.number().int().min(0),
    }),
    looksLikeMillis: z.number().int().min(0),
    held: z.number().int().min(0),
    withoutTtlAttribute: z.number().int().min(0),
    truncated: z.boolean(),
    notInExpiryIndex: z.number().int().min(0).optional(),
  })
  .meta({
    id: 'Preview',
    description: 'What TTL would do to the table now (read-only; see control/README.md).',
  });

export const GuardSchema = z
  .object({
    table: z.string(),
    state: z.enum(['ARMED', 'PAUSED', 'CONFIRMED']),
    reason: z.string().optional(),
    pausedAt: epochMs.optional(),
    cancelled: z.boolean(),
    confirmedAt: epochMs.optional(),
    confirmedBy: identity.optional(),
    cancelledAt: epochMs.optional(),
    cancelledBy: identity.optional(),
    deletes: z
      .object({
        minute: z.number().int(),
        count: z.number().int().min(0),
        prevMinute: z.number().int().optional(),
        prevCount: z.number().int().min(0).optional(),
      })
      .optional(),
  })
  .meta({ id: 'Guard', description: "The mass-deletion guard's state for one table." });

export const GuardCancelSchema = z.object({
  guard: GuardSchema,
  discardedMarks: z.number().int().min(0),
});

export const HealthSchema = z.object({ status: z.literal('ok') });
export const ReadySchema = z.object({ status: z.literal('ready') });

const CODES = [
  'validation-error',
  'invalid-json',
  'forbidden-key',
  'bad-request',
  'unauthorized',
  'not-found',
  'method-not-allowed',
  'conflict',
  'payload-too-large',
  'unsupported-media-type',
  'internal',
  'unavailable',
  'not-ready',
] as const;
export type ApiErrorCode = (typeof CODES)[number];

/** The stable codes of the error body, by the status they come with (control/api/errors.ts mapError). */
export const ERROR_CODES = {
  400: ['validation-error', 'invalid-json', 'forbidden-key', 'bad-request'],
  401: ['unauthorized'],
  404: ['not-found'],
  405: ['method-not-allowed'],
  409: ['conflict'],
  413: ['payload-too-large'],
  415: ['unsupported-media-type'],
  500: ['internal'],
  503: ['unavailable', 'not-ready'],
} as const satisfies Record<number, readonly ApiErrorCode[]>;

export type ErrorStatus = keyof typeof ERROR_CODES;

export const ApiErrorSchema = z
  .object({
    error: z.enum(CODES).meta({
      description: 'A stable machine code (control/README.md#errors).',
    }),
    message: z.string().max(512).meta({ description: 'What went wrong and where, for a person.' }),
  })
  .meta({ id: 'Error', description: 'The body of every error answer.' });

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'Bad input: `validation-error` (the message names the field: `body.settings.policy.attributeName: ...`), `invalid-json`, `forbidden-key` (a `__proto__` key) or `bad-request` (a malformed URL).',
  401: 'A missing, malformed or wrong bearer token: `unauthorized` (with `WWW-Authenticate: Bearer`).',
  404: 'An unknown table: `not-found`.',
  405: 'A method the path does not serve: `method-not-allowed`, with `Allow` listing the methods it serves (RFC 9110).',
  409: 'A conflicting state: `conflict` (a change in progress, another attribute active, a preview of a table without TTL settings, a guard action on a table the guard has not paused).',
  413: 'A body over `api.bodyLimitBytes`: `payload-too-large`.',
  415: 'A body that is neither JSON nor text: `unsupported-media-type`.',
  500: 'A bug: `internal`. The message says nothing; the server log has the details.',
  503: 'Try again later: `unavailable` (the DynamoDB API is down or throttling, the server is shutting down, or more than `api.maxConnections` connections are open, then with `Retry-After`), or `not-ready` (/readyz).',
};

type ErrorResponse = {
  description: string;
  content: { 'application/json': { schema: typeof ApiErrorSchema } };
};

/** The error answers of a route, one entry per status, each with the shared error body. */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]): Record<S, ErrorResponse> {
  // Object.fromEntries types its keys as string: the statuses given are exactly the keys.
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: ERROR_DESCRIPTIONS[status],
        content: { 'application/json': { schema: ApiErrorSchema } },
      },
    ]),
  ) as Record<S, ErrorResponse>;
}

/** A JSON answer with its description, in the form the document and fastify's type provider read. */
export function json<T extends z.ZodType>(
  description: string,
  schema: T,
): { description: string; content: { 'application/json': { schema: T } } } {
  return { description, content: { 'application/json': { schema } } };
}
