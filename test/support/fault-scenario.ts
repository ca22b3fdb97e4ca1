import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { ConfigInput } from '../../core/config';
import { messageKey } from '../../schemas';
import {
  dynamodbModel,
  seedTable,
  startWriter,
  type Counts,
  type Item,
  type KeyTruth,
  type SeedOptions,
  type TableTruth,
  type TtlModel,
} from './ground-truth';
import {
  createFaultEnv,
  createTtlTable,
  finalCheck,
  report,
  startProber,
  stopAll,
  waitUntilSettled,
  type FaultEnv,
} from './fault-env';
import type { IntentState } from '../../producer/journal';
import type { TableTtlSettings } from '../../policy';
import { countsInMode, indexedModel, type DiscoveryMode } from './discovery-mode';
import { createIndexedTtlTable, stampExpiryIndex } from './expiry-index';
import { uniqueName } from './stack';
import { marksOf } from './marks';

export interface TableSpec {
  prefix: string;
  model?: TtlModel;
  seed: number;
  counts?: Counts;
  seedOptions?: Partial<SeedOptions>;
}

const pendingSeeds = new WeakMap<FaultEnv, Array<{ table: string; spec: TableSpec }>>();

export interface SetupOptions {
  /** Leave the tables empty until `seedNow` (to seed only once the pipeline processes are up). */
  deferSeed?: boolean;
  /** Configuration for the pipeline processes only (endpoints through a fault proxy). */
  pipeline?: ConfigInput;
  /**
   * 'index': every table is created with the expiry index and backfilled (ACTIVE), its settings opt in, and the
   * test's writers (seed, concurrent writer, test-side updates) go through the stamp, as an application would. The
   * sweep is a day away, so every deletion comes through index discovery.
   */
  mode?: DiscoveryMode;
}

/**
 * A fault environment with its tables (TTL enabled) seeded, unless `deferSeed`. The writers are not started yet.
 */
export async function setup(
  tables: TableSpec[],
  config: ConfigInput = {},
  options: SetupOptions = {},
): Promise<FaultEnv> {
  const env = await createFaultEnv(config, options.pipeline);
  const mode = options.mode ?? 'scan';
  try {
    const pending: Array<{ table: string; spec: TableSpec }> = [];
    const indexed: Record<string, TableTtlSettings> = {};
    for (const given of tables) {
      const model = given.model ?? dynamodbModel();
      if (mode === 'scan') {
        pending.push({ table: await createTtlTable(env, given.prefix, model), spec: given });
        continue;
      }
      const spec = { ...given, model: indexedModel(model), counts: countsInMode(mode, given.counts ?? {}) };
      const settings = spec.model.settings;
      const name = uniqueName(`${spec.prefix}i`);
      const table = await createIndexedTtlTable(
        env.ddb,
        env.store,
        env.config.tables.control,
        name,
        settings,
      );
      indexed[table] = settings;
      pending.push({ table, spec });
    }
    if (mode === 'index') stampExpiryIndex(env.ddb, indexed);
    pendingSeeds.set(env, pending);
    if (!options.deferSeed) await seedNow(env);
  } catch (err) {
    await env.cleanup();
    throw err;
  }
  return env;
}

/** Seed the tables `setup` created. */
export async function seedNow(env: FaultEnv): Promise<void> {
  for (const { table, spec } of pendingSeeds.get(env) ?? []) {
    const truth = await seedTable(env.ddb, table, {
      seed: spec.seed,
      model: spec.model ?? dynamodbModel(),
      ...(spec.counts ? { counts: spec.counts } : {}),
      ...spec.seedOptions,
    });
    env.truths.push(truth);
    env.note(`seeded ${table} (seed ${spec.seed}): ${JSON.stringify(truth.countsByCategory())}`);
  }
  pendingSeeds.delete(env);
}

export interface Run {
  prober: ReturnType<typeof startProber>;
}

/** Start the concurrent writers of every table and the background publish-before-delete probes. */
export function begin(env: FaultEnv): Run {
  for (const truth of env.truths) env.writers.push(startWriter(env.ddb, truth));
  env.note('writers and probes started');
  return { prober: startProber(env) };
}

/**
 * The end of every scenario: wait until the pipeline has finished (bounded), stop it gracefully, read the whole
 * topic and check the invariants. Throws with the full report when anything is wrong. `afterSettled` runs once the
 * pipeline is done and before its processes are stopped (to let an archiver catch up, say).
 */
export async function settleAndCheck(
  env: FaultEnv,
  run: Run,
  context: string,
  settleMs = 120_000,
  afterSettled?: () => Promise<void>,
): Promise<void> {
  try {
    await waitUntilSettled(env, settleMs);
    await afterSettled?.();
  } catch (err) {
    throw new Error(
      `${context}: ${(err as Error).message}\ntimeline:\n${env.timeline.map((l) => `  ${l}`).join('\n')}`,
    );
  } finally {
    const p = await run.prober.stop();
    env.note(`probes taken ${p.taken}, skipped ${p.skipped}`);
  }
  env.note('settled');
  const badStops = await stopAll(env);
  const result = await finalCheck(env);
  const writer = env.writers.map((w) => w.stats());
  env.note(`writers: ${JSON.stringify(writer)}`);
  if (badStops.length > 0) result.problems.push(...badStops.map((b) => `graceful stop failed: ${b}`));
  if (result.problems.length > 0) throw new Error(report({ ...result, ok: false }, env, context));
  // Visible in the test output: what the scenario actually exercised (and, with FAULT_VERBOSE=1, how it went).
  if (process.env.FAULT_VERBOSE === '1')
    process.stdout.write(
      `[fault] ${context} timeline:\n${env.timeline.map((l) => `  ${l}`).join('\n')}\n` +
        env.procs.map((p) => `--- ${p.describe()} stderr tail ---\n${p.stderr(3000)}`).join('\n') +
        '\n',
    );
  process.stdout.write(
    `[fault] ${context}: ${JSON.stringify(result.summary)} writers ${JSON.stringify(writer)}\n`,
  );
}

/** Keys of `truth` with an intent row in the given state, excluding keys the concurrent writer will touch. */
export async function intentKeys(env: FaultEnv, truth: TableTruth, state: IntentState): Promise<string[]> {
  const planned = new Set(truth.writerPlan.map((w) => w.pk));
  const rows = await marksOf(env, truth.table);
  return rows
    .filter((r) => r.kind === 'intent' && r.state === state)
    .map((r) => truth.keys.get(messageKey(truth.table, r.keys))?.pk)
    .filter((pk): pk is string => pk !== undefined && !planned.has(pk));
}

/**
 * Update an item as a test-side writer (only if it exists) and record the new version with `expiresAtMs`.
 * True if the item was there.
 */
async function updateIfPresent(
  env: FaultEnv,
  truth: TableTruth,
  pk: string,
  update: { expression: string; names?: Record<string, string>; values: Item },
  expiresAtMs: number | null,
): Promise<boolean> {
  try {
    const out = await env.ddb.send(
      new UpdateItemCommand({
        TableName: truth.table,
        Key: { pk: { S: pk } },
        UpdateExpression: update.expression,
        ConditionExpression: 'attribute_exists(pk)',
        ...(update.names ? { ExpressionAttributeNames: update.names } : {}),
        ExpressionAttributeValues: update.values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    truth.overwrite(pk, out.Attributes ?? {}, expiresAtMs, 'test');
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** Extend an item's TTL by an hour (only if it exists); records the new version. True if the item was there. */
export async function extendNow(env: FaultEnv, truth: TableTruth, pk: string): Promise<boolean> {
  const update = {
    expression: 'SET #t = :v, testOp = :op',
    names: { '#t': truth.model.attribute },
    values: { ':v': truth.model.valueFor(Date.now() + 3_600_000), ':op': { S: 'extended-after-crash' } },
  };
  return updateIfPresent(env, truth, pk, update, null);
}

/** Change a non-TTL attribute of an item (still expired afterwards), as a writer racing the deleter would. */
export async function touchNow(env: FaultEnv, truth: TableTruth, pk: string): Promise<boolean> {
  const prev = truth.last(truth.byPk.get(pk) as KeyTruth);
  const update = {
    expression: 'SET payload = :p, testOp = :op',
    values: { ':p': { S: `touched at ${Date.now()}` }, ':op': { S: 'touched-before-delete' } },
  };
  return updateIfPresent(env, truth, pk, update, prev.expiresAtMs);
}

export async function isPresent(env: FaultEnv, table: string, pk: string): Promise<boolean> {
  const out = await env.ddb.send(
    new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }),
  );
  return out.Item !== undefined;
}

export type { Item };
