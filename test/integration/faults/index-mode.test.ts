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
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConfigInput } from '../../../core/config';
import { createFaultEnv, takeProbe, within, type FaultEnv, type PipelineProc } from '../../support/fault-env';
import { stackCtl } from '../../support/stack';
import {
  DEFAULT_COUNTS,
  dynamodbModel,
  seedTable,
  snapshotTable,
  type TtlModel,
} from '../../support/ground-truth';
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

async function setupIndexed(
  prefix: string,
  seed: number,
  config: ConfigInput = {},
  beforeSeed?: (env: FaultEnv) => Promise<void>,
): Promise<FaultEnv> {
  const env = await createFaultEnv(config);
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
    await beforeSeed?.(env);
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

/** Live scan-kind leases: name → owner (segments `<table>#<n>`, index shards `<table>#q<n>`). */
async function scanLeases(env: FaultEnv): Promise<Map<string, string>> {
  const out = await env.ddb.send(
    new ScanCommand({
      TableName: env.config.tables.control,
      ConsistentRead: true,
      FilterExpression: 'begins_with(pk, :l)',
      ExpressionAttributeValues: { ':l': { S: 'lease#scan#' } },
    }),
  );
  const leases = new Map<string, string>();
  for (const row of out.Items ?? [])
    if (Number(row.expiresAt?.N ?? 0) > Date.now()) leases.set(row.pk?.S ?? '', row.owner?.S ?? '');
  return leases;
}

describe('index mode: three scanners share the index shards', () => {
  let env: FaultEnv | undefined;
  afterEach(async () => {
    await env?.cleanup();
    env = undefined;
  });

  it('all shards leased, the busiest scanner SIGKILLed mid-run, its shards taken over, nothing lost', async () => {
    let scanners: PipelineProc[] = [];
    let victim: PipelineProc | undefined;
    let victimShards = 0;
    // The processes start (and share the leases) before the table is seeded, so the kill lands mid-run.
    const e = (env = await setupIndexed('fixs', 6161, { producer: { shards: 6 } }, async (e) => {
      scanners = [1, 2, 3].map((i) =>
        e.spawn(`scanner-${i}`, ['scanner'], { TTLSTREAM_OWNER_ID: `idx-scanner-${i}` }),
      );
      e.spawn('producer-1', ['producer']);
      e.spawn('producer-2', ['producer']);
      await Promise.all(e.procs.map((p) => p.ready));
      const deadline = Date.now() + 60_000;
      for (;;) {
        const leases = await scanLeases(e);
        const owners = new Set(leases.values());
        const shards = [...leases].filter(([name]) => /#q\d+$/.test(name));
        if (owners.size === 3 && shards.length === 4) {
          // The scanner holding the most index shards is the one to kill: its shards must be taken over.
          const count = (p: PipelineProc) => shards.filter(([, o]) => o === `idx-${p.name}`).length;
          victim = [...scanners].sort((a, b) => count(b) - count(a))[0];
          victimShards = victim ? count(victim) : 0;
          e.note(
            `leases shared by three scanners; ${victim?.name} holds ${victim ? count(victim) : 0} of 4 index shards`,
          );
          break;
        }
        if (Date.now() > deadline)
          throw new Error(`leases not shared within 60 s: ${JSON.stringify([...leases])}`);
        await sleep(300);
      }
    }));
    // Items expire for seconds after the kill: those in its shards are found only once a peer takes them over.
    expect(victimShards).toBeGreaterThan(0);
    const run = begin(e);
    await sleep(3000);
    await victim!.crash();
    e.note(`SIGKILL ${victim!.name}`);
    await takeProbe(e, `right after SIGKILL of ${victim!.name}`);
    await settleAndCheck(e, run, 'index mode: three scanners, the busiest killed', 180_000);
  }, 360_000);
});

describe('index mode: the DynamoDB server restarts mid-run', () => {
  let env: FaultEnv | undefined;
  afterEach(async () => {
    await env?.cleanup();
    env = undefined;
  });

  it('leases, marks, intents, items and the index survive; nothing lost or doubled', async () => {
    // A paced scanner, so deletions are still going on when the server goes down.
    const e = (env = await setupIndexed('fixd', 5303, { scanner: { readRateLimit: 150 } }));
    const truth = e.truths[0]!;
    const run = begin(e);
    e.spawn('scanner-1', ['scanner']);
    e.spawn('producer-1', ['producer']);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const present = await snapshotTable(e.ddb, truth.table);
      const gone = [...truth.keys.keys()].filter((id) => !present.has(id)).length;
      if (gone >= 20) break;
      if (Date.now() > deadline) throw new Error(`only ${gone} deletions within 60 s`);
      await sleep(200);
    }
    e.note('20 deletions seen; restarting DynamoDB');
    const restarted = await within(
      stackCtl('restart', 'dynamodb').then(() => true),
      120_000,
    );
    if (!restarted) throw new Error('infra/ctl.sh restart dynamodb did not finish within 120 s');
    e.note('DynamoDB is back');
    await takeProbe(e, 'right after the DynamoDB restart');
    await settleAndCheck(e, run, 'index mode: DynamoDB restart mid-run', 240_000);
  }, 420_000);
});
