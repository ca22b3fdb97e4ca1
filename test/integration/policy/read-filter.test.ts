import { PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { createDynamoClient } from '../../../core/clients';
import {
  evaluate,
  filterUnexpired,
  isExpired,
  notExpiredFilter,
  FIVE_YEARS_SECONDS,
  type Item,
  type TableTtlSettings,
} from '../../../policy';
import { DYNAMO_SERVERS, serverConfig } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, scanTable, uniqueName } from '../../support/stack';

/**
 * notExpiredFilter in a real Scan hides exactly the items `evaluate` calls expired: the server's
 * decimal comparison and the engine agree to the millisecond, boundaries included.
 */
describe.each(DYNAMO_SERVERS)('notExpiredFilter in a real Scan (%s)', (server) => {
  const ddb = createDynamoClient(serverConfig(server));
  const table = uniqueName('policy-filter');
  const settings: TableTtlSettings = {
    policy: { mode: 'dynamodb', attributeName: 'exp' },
    legalHoldAttribute: 'hold',
  };
  const NOW = Date.UTC(2031, 4, 6, 7, 8, 9, 123); // a fixed instant with milliseconds
  const NOW_S = Math.floor(NOW / 1000);
  const FIVE_Y_LINE = (NOW - FIVE_YEARS_SECONDS * 1000) / 1000;

  const fixed: Array<[string, Record<string, AttributeValue>]> = [
    ['no-ttl', {}],
    ['string-ttl', { exp: { S: String(NOW_S - 10) } }],
    ['list-ttl', { exp: { L: [{ N: String(NOW_S - 10) }] } }],
    ['expired', { exp: { N: String(NOW_S - 10) } }],
    ['future', { exp: { N: String(NOW_S + 10) } }],
    ['exactly-now', { exp: { N: `${NOW_S}.123` } }],
    ['one-ms-after-now', { exp: { N: `${NOW_S}.124` } }],
    ['one-ms-before-now', { exp: { N: `${NOW_S}.122` } }],
    ['on-the-5-year-line', { exp: { N: FIVE_Y_LINE.toFixed(3) } }],
    ['one-ms-beyond-5-years', { exp: { N: (FIVE_Y_LINE - 0.001).toFixed(3) } }],
    ['zero', { exp: { N: '0' } }],
    ['negative', { exp: { N: '-100' } }],
    ['millis', { exp: { N: String(NOW - 1000) } }],
    ['held-expired', { exp: { N: String(NOW_S - 10) }, hold: { BOOL: true } }],
    ['unheld-expired', { exp: { N: String(NOW_S - 10) }, hold: { BOOL: false } }],
    ['string-hold-expired', { exp: { N: String(NOW_S - 10) }, hold: { S: 'true' } }],
    ['exponent-expired', { exp: { N: `${(NOW_S - 10) / 1000}e3` } }],
  ];

  // Random items around now and around the 5-year line, with a reproducible seed.
  const seed = 20310506;
  const arbExp = fc.oneof(
    fc.integer({ min: -86_400_000, max: 86_400_000 }).map((d) => NOW + d),
    fc.integer({ min: -86_400_000, max: 86_400_000 }).map((d) => NOW - FIVE_YEARS_SECONDS * 1000 + d),
  );
  const random: Array<[string, Record<string, AttributeValue>]> = fc
    .sample(fc.tuple(arbExp, fc.constantFrom(0, 1, 3), fc.boolean()), { numRuns: 150, seed })
    .map(([ms, decimals, hold], i) => [
      `random-${i}`,
      {
        exp: { N: (ms / 1000).toFixed(decimals) },
        ...(hold ? { hold: { BOOL: i % 2 === 0 } } : {}),
      },
    ]);

  const items: Item[] = [...fixed, ...random].map(([id, attributes]) => ({ pk: { S: id }, ...attributes }));

  beforeAll(async () => {
    await createTestTable(ddb, table);
    for (const item of items) await ddb.send(new PutItemCommand({ TableName: table, Item: item }));
  });
  afterAll(async () => {
    await deleteTestTable(ddb, table);
    ddb.destroy();
  });

  const scanIds = async (filter: ReturnType<typeof notExpiredFilter>): Promise<string[]> => {
    const items = await scanTable(
      ddb,
      table,
      filter
        ? {
            FilterExpression: filter.expression,
            ExpressionAttributeNames: filter.names,
            ExpressionAttributeValues: filter.values,
          }
        : {},
    );
    return items.map((item) => (item.pk as { S: string }).S).sort();
  };

  it('returns exactly the items filterUnexpired keeps', async () => {
    const stored = await scanIds(null);
    expect(stored).toHaveLength(items.length);
    const visible = await scanIds(notExpiredFilter(settings, NOW));
    const expected = filterUnexpired(settings, items, NOW)
      .map((item) => (item.pk as { S: string }).S)
      .sort();
    expect(visible).toEqual(expected);
    // The comparison is not vacuous: both sides of every boundary are present.
    const hidden = items
      .filter((item) => isExpired(evaluate(settings, item, NOW)))
      .map((i) => (i.pk as { S: string }).S);
    expect(hidden).toEqual(
      expect.arrayContaining([
        'expired',
        'exactly-now',
        'one-ms-before-now',
        'on-the-5-year-line',
        'unheld-expired',
      ]),
    );
    expect(visible).toEqual(
      expect.arrayContaining([
        'no-ttl',
        'future',
        'one-ms-after-now',
        'one-ms-beyond-5-years',
        'held-expired',
        'millis',
      ]),
    );
    expect(hidden.filter((id) => id.startsWith('random-')).length).toBeGreaterThan(20);
    expect(visible.filter((id) => id.startsWith('random-')).length).toBeGreaterThan(20);
  });

  it('without a hold attribute configured, a held item is hidden like any other expired item', async () => {
    const noHold: TableTtlSettings = { policy: settings.policy };
    const visible = await scanIds(notExpiredFilter(noHold, NOW));
    expect(visible).not.toContain('held-expired');
    expect(visible).toEqual(
      filterUnexpired(noHold, items, NOW)
        .map((item) => (item.pk as { S: string }).S)
        .sort(),
    );
  });
});
