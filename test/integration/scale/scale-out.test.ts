import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { scaleCounts, snapshotTable } from '../../support/ground-truth';
import { takeProbe, type FaultEnv, type PipelineProc } from '../../support/fault-env';
import { begin, seedNow, settleAndCheck, setup } from '../faults/scenario';

/**
 * Scale-out: three scanner and three producer processes on one table share the segments and mark shards (each
 * holds leases), delete everything expired exactly once (one effective REMOVE per deletion, nothing kept deleted),
 * and when one scanner and one producer are SIGKILLed mid-run the others take their leases over and finish.
 */

async function liveLeaseOwners(env: FaultEnv): Promise<Map<string, Set<string>>> {
  const out = await env.ddb.send(
    new ScanCommand({
      TableName: env.config.tables.control,
      ConsistentRead: true,
      FilterExpression: 'begins_with(pk, :l)',
      ExpressionAttributeValues: { ':l': { S: 'lease#' } },
    }),
  );
  const byKind = new Map<string, Set<string>>();
  const now = Date.now();
  for (const row of out.Items ?? []) {
    if (Number(row.expiresAt?.N ?? 0) <= now) continue;
    const kind = (row.pk?.S ?? '').split('#')[1] as string;
    byKind.set(kind, (byKind.get(kind) ?? new Set()).add(row.owner?.S ?? ''));
  }
  return byKind;
}

describe('three scanners and three producers on one table', () => {
  let env: FaultEnv | undefined;
  afterEach(async () => {
    await env?.cleanup();
    env = undefined;
  });

  it('share the work, delete once, and survive a SIGKILL of one of each', async () => {
    const e = (env = await setup(
      [{ prefix: 'fsc', seed: 6060, counts: scaleCounts(8) }],
      { scanner: { totalSegments: 6, readRateLimit: 300 }, producer: { shards: 6 } },
      { deferSeed: true },
    ));
    const scanners: PipelineProc[] = [1, 2, 3].map((i) => e.spawn(`scanner-${i}`, ['scanner']));
    const producers: PipelineProc[] = [1, 2, 3].map((i) => e.spawn(`producer-${i}`, ['producer']));
    await Promise.all([...scanners, ...producers].map((p) => p.ready));

    // Every process holds a share of the leases.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const owners = await liveLeaseOwners(e);
      if ((owners.get('scan')?.size ?? 0) === 3 && (owners.get('marks')?.size ?? 0) === 3) {
        e.note(`leases held: ${JSON.stringify([...owners].map(([k, v]) => [k, [...v].sort()]))}`);
        break;
      }
      if (Date.now() > deadline)
        throw new Error(
          `leases not shared by all six processes within 60 s: ${JSON.stringify([...owners].map(([k, v]) => [k, [...v]]))}`,
        );
      await sleep(300);
    }
    await seedNow(e);
    const truth = e.truths[0]!;
    const run = begin(e);

    // Kill one of each while deletions are in full swing.
    const due = truth.dueForDeletion(Date.now()).length;
    for (;;) {
      const present = await snapshotTable(e.ddb, truth.table);
      const gone = [...truth.keys.keys()].filter((id) => !present.has(id)).length;
      if (gone >= Math.min(100, due / 4)) {
        e.note(`${gone} of ${due} initially due items deleted; SIGKILL scanner-2 and producer-2`);
        break;
      }
      await sleep(100);
    }
    await Promise.all([scanners[1]!.crash(), producers[1]!.crash()]);
    await takeProbe(e, 'right after SIGKILL of scanner-2 and producer-2');
    await settleAndCheck(e, run, 'scale-out with one scanner and one producer killed', 240_000);
  }, 420_000);
});
