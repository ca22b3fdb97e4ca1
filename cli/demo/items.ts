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

/** One demo order: what TTL should do with it and why, and its TTL value for a demo started at `nowS`. */
interface DemoOrder {
  id: string;
  fate: Fate;
  why: string;
  customer: string;
  total: string;
  ttl?: (nowS: number) => AttributeValue;
  extra?: Record<string, AttributeValue>;
}

const epoch = (v: number): AttributeValue => ({ N: String(v) });

const DEMO_ORDERS: readonly DemoOrder[] = [
  {
    id: 'order#1000',
    fate: 'expires',
    why: 'expired 30 s before the demo started',
    customer: 'ada',
    total: '12.50',
    ttl: (now) => epoch(now - 30),
  },
  {
    id: 'order#1001',
    fate: 'expires',
    why: 'expires 4 s in',
    customer: 'grace',
    total: '99.00',
    ttl: (now) => epoch(now + 4),
  },
  {
    id: 'order#1002',
    fate: 'expires',
    why: 'expires 6 s in',
    customer: 'linus',
    total: '7.25',
    ttl: (now) => epoch(now + 6),
  },
  {
    id: 'order#1003',
    fate: 'expires',
    why: 'expires 8 s in',
    customer: 'barbara',
    total: '41.10',
    ttl: (now) => epoch(now + 8),
  },
  {
    id: 'order#1004',
    fate: 'expires',
    why: 'expires 10 s in',
    customer: 'ken',
    total: '5.00',
    ttl: (now) => epoch(now + 10),
  },
  {
    id: 'order#1005',
    fate: 'expires',
    why: 'expires 12 s in',
    customer: 'margaret',
    total: '310.00',
    ttl: (now) => epoch(now + 12),
  },
  {
    id: 'order#2000',
    fate: 'future',
    why: 'expires tomorrow',
    customer: 'dennis',
    total: '18.00',
    ttl: (now) => epoch(now + 86_400),
  },
  {
    id: 'order#2001',
    fate: 'future',
    why: 'expires in 30 days',
    customer: 'edsger',
    total: '64.00',
    ttl: (now) => epoch(now + 30 * 86_400),
  },
  {
    id: 'order#3000',
    fate: 'malformed',
    why: 'TTL is a string: ignored',
    customer: 'alan',
    total: '3.00',
    ttl: () => ({ S: 'tomorrow' }),
  },
  {
    id: 'order#3001',
    fate: 'malformed',
    why: 'TTL more than 5 years old: ignored',
    customer: 'john',
    total: '8.00',
    ttl: (now) => epoch(now - 6 * YEAR_S),
  },
  { id: 'order#3002', fate: 'no-ttl', why: 'no TTL attribute', customer: 'frances', total: '22.00' },
  {
    id: 'order#4000',
    fate: 'held',
    why: 'expired, but under legal hold',
    customer: 'radia',
    total: '1200.00',
    ttl: (now) => epoch(now - 60),
    extra: { [HOLD_ATTRIBUTE]: { BOOL: true } },
  },
];

/**
 * The demo's items, relative to `nowS`: some already expired or expiring within seconds, some
 * later, some whose TTL value DynamoDB ignores (a string, an epoch more than five years old), one
 * expired but under legal hold, one without TTL. Payloads include maps, lists and sets so the
 * archived OldImage shows that nothing is flattened.
 */
export function demoItems(nowS: number): DemoItem[] {
  return DEMO_ORDERS.map((o) => ({ id: o.id, fate: o.fate, why: o.why, item: orderItem(o, nowS) }));
}

function orderItem(o: DemoOrder, nowS: number): Record<string, AttributeValue> {
  return {
    pk: { S: o.id },
    customer: { S: o.customer },
    total: { N: o.total },
    lines: {
      L: [{ M: { sku: { S: 'SKU-1' }, qty: { N: '2' } } }, { M: { sku: { S: 'SKU-7' }, qty: { N: '1' } } }],
    },
    tags: { SS: ['demo', 'ttl'] },
    ...(o.ttl ? { [TTL_ATTRIBUTE]: o.ttl(nowS) } : {}),
    ...o.extra,
  };
}
