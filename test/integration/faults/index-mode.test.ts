import { silentLogger } from '../../../core/logger';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  EXPIRY_SHARD_ATTRIBUTE,
  addLastWriteStamp,
  expiryShardOf,
  expiryStampTables,
  type TableTtlSettings,
} from '../../../policy';
import { backfillExpiryIndex } from '../../../scanner/backfill';
import { createTableWithExpiryIndex } from '../../support/expiry-index';
import { createFaultEnv, takeProbe, type FaultEnv } from '../../support/fault-env';
import { DEFAULT_COUNTS, dynamodbModel, seedTable, type TtlModel } from '../../support/ground-truth';
import { uniqueName } from '../../support/stack';
import { begin, settleAndCheck } from './scenario';

/**
 * Invariants 1–3 in index mode (issue 13), for a representative crash point on each side of the marks: the same
 * ground truth, writers, probes and final check as crash-points.test.ts, on a table created with the expiry index
 * (backfilled, so ACTIVE) whose writers go through the stamp. The sweep is a day away, so every deletion comes
 * through index discovery. The TTL categories of another type (S, NULL, BOOL) are left out: a GSI refuses an item
 * whose index key has another type (docs/decisions/0011).
 */
const NO_WRONG_TYPE = { 'malformed-s': 0, 'malformed-null': 0, 'malformed-bool': 0 };

async function setupIndexed(prefix: string, seed: number): Promise<FaultEnv> {
  const env = await createFaultEnv();
  try {
    const base = dynamodbModel();
    const settings: TableTtlSettings = { ...base.settings, expiryIndex: { shards: 4 } };
    const model: TtlModel = {
      ...base,
      settings,
      stampImage: (image) => ({
        ...image,
        [EXPIRY_SHARD_ATTRIBUTE]: { N: String(expiryShardOf({ pk: image.pk as AttributeValue }, 4)) },
      }),
    };
    const table = await createTableWithExpiryIndex(env.ddb, uniqueName(prefix), settings);
    await env.store.update(table, { enabled: true, settings }, 'fault-test');
    await backfillExpiryIndex({
      ddb: env.ddb,
      controlTable: env.config.tables.control,
      table,
      settings,
      segments: 2,
      ratePerSec: 10_000,
      dryRun: false,
      leaseMs: 1000,
      logger: silentLogger,
    });
    // The test's writers (seed, concurrent writer) are the application: they write through the stamp.
    addLastWriteStamp(env.ddb, {
      tables: {},
      expiryIndex: expiryStampTables({ [table]: settings }, { [table]: ['pk'] }),
    });
    const truth = await seedTable(env.ddb, table, {
      seed,
      model,
      counts: { ...DEFAULT_COUNTS, ...NO_WRONG_TYPE },
    });
    env.truths.push(truth);
    env.note(`seeded ${table} in index mode: ${JSON.stringify(truth.countsByCategory())}`);
  } catch (err) {
    await env.cleanup();
    throw err;
  }
  return env;
}

describe('index mode: SIGKILL at a crash point, restart, nothing lost', () => {
  let env: FaultEnv | undefined;
  afterEach(async () => {
    await env?.cleanup();
    env = undefined;
  });

  it.each([
    ['scanner', 'scanner.after-mark-write', 2],
    ['producer', 'producer.after-publish', 2],
  ] as const)(
    '%s killed at %s',
    async (role, point, hit) => {
      const e = (env = await setupIndexed(`fix${role[0]}`, 4000 + point.length));
      const run = begin(e);
      const other = role === 'scanner' ? 'producer' : 'scanner';
      const crashing = e.spawn(`${role}-1`, [role], { TTLSTREAM_CRASH_AT: `${point}@${hit}` });
      e.spawn(`${other}-1`, [other]);
      await crashing.crashedAt(point, 60_000);
      e.note(`${role}-1 crashed at ${point}`);
      await takeProbe(e, `right after the crash at ${point}`);
      e.spawn(`${role}-2`, [role]);
      await settleAndCheck(e, run, `index mode: ${role} killed at ${point}`, 120_000);
    },
    240_000,
  );
});
