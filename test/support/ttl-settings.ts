import type { TableTtlSettings } from '../../policy/settings';

/** TTL settings of each policy mode, as the tests write them. */

/** DynamoDB mode on `attributeName`, with a legal-hold attribute if given. */
export function dynamodbTtl(attributeName: string, legalHoldAttribute?: string): TableTtlSettings {
  return {
    policy: { mode: 'dynamodb', attributeName },
    ...(legalHoldAttribute ? { legalHoldAttribute } : {}),
  };
}

/** Mongo mode: `expireAfterSeconds` after the time in `timeField` (`createdAt`, epoch seconds unless told). */
export function mongoTtl(
  expireAfterSeconds: number | 'off',
  timeFormat: 'epoch-seconds' | 'epoch-millis' | 'iso-8601' = 'epoch-seconds',
  timeField = 'createdAt',
): TableTtlSettings {
  return { policy: { mode: 'mongo', expireAfterSeconds, timeField, timeFormat } };
}

/** Cosmos mode: `defaultTtl` seconds after `_ts`, an item's own `ttl` attribute overriding it. */
export function cosmosTtl(defaultTtl: number | null): TableTtlSettings {
  return { policy: { mode: 'cosmos', defaultTtl, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' } };
}
