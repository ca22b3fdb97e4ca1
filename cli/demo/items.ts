import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { TableTtlSettings } from '../../policy/settings';

export const DEMO_TABLE = 'ttlstream_demo';
export const TTL_ATTRIBUTE = 'expiresAt';
export const HOLD_ATTRIBUTE = 'legalHold';

export const DEMO_SETTINGS: TableTtlSettings = {
  policy: { mode: 'dynamodb', attributeName: TTL_ATTRIBUTE },
  legalHoldAttribute: HOLD_ATTRIBUTE,
};

/** What the demo expects TTL to do with an item, and why (shown in the terminal). */
export type Fate = 'expires' | 'future' | 'malformed' | 'held' | 'no-ttl';

export interface DemoItem {
  id: string;
  fate: Fate;
  why: string;
  item: Record<string, AttributeValue>;
}

const YEAR_S = 365 * 24 * 3600;

/**
 * The demo's items, relative to `nowS`: some already expired or expiring within seconds, some
 * later, some whose TTL value DynamoDB ignores (a string, an epoch more than five years old), one
 * expired but under legal hold, one without TTL. Payloads include maps, lists and sets so the
 * archived OldImage shows that nothing is flattened.
 */
export function demoItems(nowS: number): DemoItem[] {
  const order = (
    id: string,
    customer: string,
    total: string,
    ttl?: AttributeValue,
    extra: Record<string, AttributeValue> = {},
  ) => ({
    pk: { S: id },
    customer: { S: customer },
    total: { N: total },
    lines: {
      L: [{ M: { sku: { S: 'SKU-1' }, qty: { N: '2' } } }, { M: { sku: { S: 'SKU-7' }, qty: { N: '1' } } }],
    },
    tags: { SS: ['demo', 'ttl'] },
    ...(ttl ? { [TTL_ATTRIBUTE]: ttl } : {}),
    ...extra,
  });
  const n = (v: number): AttributeValue => ({ N: String(v) });
  return [
    {
      id: 'order#1000',
      fate: 'expires',
      why: 'expired 30 s before the demo started',
      item: order('order#1000', 'ada', '12.50', n(nowS - 30)),
    },
    {
      id: 'order#1001',
      fate: 'expires',
      why: 'expires 4 s in',
      item: order('order#1001', 'grace', '99.00', n(nowS + 4)),
    },
    {
      id: 'order#1002',
      fate: 'expires',
      why: 'expires 6 s in',
      item: order('order#1002', 'linus', '7.25', n(nowS + 6)),
    },
    {
      id: 'order#1003',
      fate: 'expires',
      why: 'expires 8 s in',
      item: order('order#1003', 'barbara', '41.10', n(nowS + 8)),
    },
    {
      id: 'order#1004',
      fate: 'expires',
      why: 'expires 10 s in',
      item: order('order#1004', 'ken', '5.00', n(nowS + 10)),
    },
    {
      id: 'order#1005',
      fate: 'expires',
      why: 'expires 12 s in',
      item: order('order#1005', 'margaret', '310.00', n(nowS + 12)),
    },
    {
      id: 'order#2000',
      fate: 'future',
      why: 'expires tomorrow',
      item: order('order#2000', 'dennis', '18.00', n(nowS + 86_400)),
    },
    {
      id: 'order#2001',
      fate: 'future',
      why: 'expires in 30 days',
      item: order('order#2001', 'edsger', '64.00', n(nowS + 30 * 86_400)),
    },
    {
      id: 'order#3000',
      fate: 'malformed',
      why: 'TTL is a string: ignored',
      item: order('order#3000', 'alan', '3.00', { S: 'tomorrow' }),
    },
    {
      id: 'order#3001',
      fate: 'malformed',
      why: 'TTL more than 5 years old: ignored',
      item: order('order#3001', 'john', '8.00', n(nowS - 6 * YEAR_S)),
    },
    {
      id: 'order#3002',
      fate: 'no-ttl',
      why: 'no TTL attribute',
      item: order('order#3002', 'frances', '22.00'),
    },
    {
      id: 'order#4000',
      fate: 'held',
      why: 'expired, but under legal hold',
      item: order('order#4000', 'radia', '1200.00', n(nowS - 60), { [HOLD_ATTRIBUTE]: { BOOL: true } }),
    },
  ];
}
