import { z } from 'zod';
import { ExpiryIndexSettingsSchema } from './expiry-index-settings';

/**
 * A table's TTL settings: the contract shared by the control plane (which stores them), the
 * scanner and producer (which apply them) and the helpers for application code.
 */

const attributeName = z
  .string()
  .min(1, 'attribute name must not be empty')
  .max(255, 'attribute name must be at most 255 characters');

/** DynamoDB: a top-level Number attribute holds the expiry as epoch seconds. */
export const DynamoTtlSchema = z.object({
  mode: z.literal('dynamodb'),
  attributeName,
});

/** Cosmos DB's default TTL: null (off), -1 (on, no default), 0 (expire at once) or 1..2147483647 seconds. */
export const CosmosDefaultTtlSchema = z.union([
  z.null(),
  z.literal(-1),
  z.number().int('defaultTtl must be an integer').min(0).max(2147483647),
]);

/** Cosmos DB: container default TTL plus per-item `ttl`, both relative to the item's last write. */
export const CosmosTtlSchema = z.object({
  mode: z.literal('cosmos'),
  defaultTtl: CosmosDefaultTtlSchema,
  ttlAttribute: attributeName.default('ttl'),
  lastWriteAttribute: attributeName.default('_ts'),
});

export const TimeFormatSchema = z.enum(['epoch-seconds', 'epoch-millis', 'iso-8601']);

/** MongoDB: expireAfterSeconds after a time field, or "off". */
export const MongoTtlSchema = z.object({
  mode: z.literal('mongo'),
  expireAfterSeconds: z.union([
    z.literal('off'),
    z.number().int('expireAfterSeconds must be an integer').min(0),
  ]),
  timeField: attributeName,
  timeFormat: TimeFormatSchema.default('epoch-seconds'),
});

export const TtlPolicySchema = z.discriminatedUnion('mode', [
  DynamoTtlSchema,
  CosmosTtlSchema,
  MongoTtlSchema,
]);

/**
 * Who deletes a table's expired items. `ttlstream` (the default): the scanner finds them and the producer deletes each
 * within seconds of its expiry, one write per deletion. `dynamodb`: DynamoDB's own TTL deletes them (within days, at
 * no write cost) and the streams role follows the table's stream and publishes its TTL deletions in the same contract;
 * the scanner and the producer leave the table alone.
 */
export const DELETERS = ['ttlstream', 'dynamodb'] as const;
export const DeleterSchema = z.enum(DELETERS);
export type Deleter = z.infer<typeof DeleterSchema>;

/** Days the archive keeps this table's records after deletion; overrides config archive.retentionDays. */
const archiveRetentionDays = z.number().int().positive().optional();

/** ttlstream deletes the expired items: any mode, a legal hold, the expiry index. */
const DeletedByTtlstreamSchema = z.object({
  policy: TtlPolicySchema,
  /** When this top-level attribute is BOOL true, the item is kept whatever its TTL says. */
  legalHoldAttribute: attributeName.optional(),
  archiveRetentionDays,
  /**
   * Opt-in expiry index (decision 0011): the scanner queries a sparse GSI by shard for "expiry ≤ now" instead of
   * scanning, and a low-rate sweep scans for what writers without the stamp left out. Absent: scan mode.
   */
  expiryIndex: ExpiryIndexSettingsSchema.optional(),
  /** Who deletes the expired items (see DELETERS); absent: ttlstream. */
  deleter: z.literal('ttlstream').optional(),
});

/**
 * DynamoDB's own TTL deletes the expired items: it reads a Number attribute of epoch seconds and knows no legal hold
 * and no expiry index, so the settings cannot name them (the API document says so too, as the other branch).
 */
const DeletedByDynamodbSchema = z.object({
  policy: z.object({
    mode: z.literal('dynamodb', {
      error: (issue) =>
        `DynamoDB's own TTL deletes by an epoch-seconds attribute only: deleter dynamodb needs mode dynamodb, not ${String(issue.input)}`,
    }),
    attributeName,
  }),
  legalHoldAttribute: z
    .never({
      error:
        "DynamoDB's own TTL knows no legal hold and would delete held items: a legal hold needs deleter ttlstream",
    })
    .optional(),
  archiveRetentionDays,
  expiryIndex: z
    .never({ error: "the expiry index serves ttlstream's scanner: deleter dynamodb has no use for it" })
    .optional(),
  deleter: z.literal('dynamodb'),
});

/** What a table's TTL does, plus the optional legal hold that overrides it, and who deletes (DELETERS). */
export const TableTtlSettingsSchema = z.discriminatedUnion('deleter', [
  DeletedByTtlstreamSchema,
  DeletedByDynamodbSchema,
]);

/**
 * Settings as the code builds, stores and describes them: any deleter with any policy. Whatever is taken from a
 * caller or read from the store is parsed by the narrower TableTtlSettingsSchema first.
 */
export const DescribedTtlSettingsSchema = DeletedByTtlstreamSchema.extend({
  deleter: DeleterSchema.optional(),
});

/** The table's deleter, ttlstream unless the settings say otherwise. */
export function deleterOf(settings: Pick<TableTtlSettings, 'deleter'>): Deleter {
  return settings.deleter ?? 'ttlstream';
}

export const TtlStatusSchema = z.enum(['ENABLING', 'ENABLED', 'DISABLING', 'DISABLED']);

export type DynamoTtl = z.infer<typeof DynamoTtlSchema>;
export type CosmosTtl = z.infer<typeof CosmosTtlSchema>;
export type MongoTtl = z.infer<typeof MongoTtlSchema>;
export type TtlPolicy = z.infer<typeof TtlPolicySchema>;
export type TableTtlSettings = z.infer<typeof DescribedTtlSettingsSchema>;
export type TtlStatus = z.infer<typeof TtlStatusSchema>;
export type TimeFormat = z.infer<typeof TimeFormatSchema>;
