import { setTimeout as sleep } from 'node:timers/promises';
import { scaleCounts, snapshotTable } from '../../support/ground-truth';
import { takeProbe, type FaultEnv, type PipelineProc } from '../../support/fault-env';
import { DISCOVERY_MODES, FAULT_INDEX_SHARDS, seedInMode } from '../../support/discovery-mode';
import { begin, seedNow, settleAndCheck, setup } from '../../support/fault-scenario';
import { liveLeases, ownersOf } from '../../support/leases';

/**
 * Scale-out: three scanner and three producer processes on one table share the segments (or, in index mode, the
 * expiry index's shards) and the mark shards (each holds leases), delete everything expired exactly once (one
 * effective REMOVE per deletion, nothing kept deleted), and when one scanner and one producer are SIGKILLed mid-run
 * the others take their leases over and finish. In index mode the scanner killed is the one holding the most index
 * shards: items expiring in them are found only once a peer has taken them over.
 */

/** Index shard leases (`<table>#q<n>`) per owner. */
function indexShardsByOwner(leases: Map<string, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, owner] of leases) if (/#q\d+$/.test(name)) out.set(owner, (out.get(owner) ?? 0) + 1);
  return out;
}

describe.each(DISCOVERY_MODES.map((m) => [m]))(
  'three scanners and three producers on one table, %s mode',
  (mode) => {
    let env: FaultEnv | undefined;
    afterEach(async () => {
      await env?.cleanup();
      env = undefined;
    });

    it('share the work, delete once, and survive a SIGKILL of one of each', async () => {
      const e = (env = await setup(
        [{ prefix: 'fsc', seed: seedInMode(mode, 6060), counts: scaleCounts(8) }],
        { scanner: { totalSegments: 6, readRateLimit: 300 }, producer: { shards: 6 } },
        { deferSeed: true, mode },
      ));
      const scanners: PipelineProc[] = [1, 2, 3].map((i) => e.spawn(`scanner-${i}`, ['scanner']));
      const producers: PipelineProc[] = [1, 2, 3].map((i) => e.spawn(`producer-${i}`, ['producer']));
      await Promise.all([...scanners, ...producers].map((p) => p.ready));

      // Every process holds a share of the leases (in index mode: every index shard is leased too).
      const deadline = Date.now() + 60_000;
      let victim = scanners[1]!;
      let victimShards = 0;
      for (;;) {
        const leases = await liveLeases(e);
        const shards = indexShardsByOwner(leases);
        const indexShared =
          mode === 'scan' || [...shards.values()].reduce((a, b) => a + b, 0) === FAULT_INDEX_SHARDS;
        if (ownersOf(leases, 'scan').size === 3 && ownersOf(leases, 'marks').size === 3 && indexShared) {
          if (mode === 'index') {
            victim = [...scanners].sort((a, b) => (shards.get(b.name) ?? 0) - (shards.get(a.name) ?? 0))[0]!;
            victimShards = shards.get(victim.name) ?? 0;
          }
          e.note(
            `leases held: ${JSON.stringify([...leases].sort())}; the scanner to kill: ${victim.name}` +
              (mode === 'index' ? ` (${victimShards} of ${FAULT_INDEX_SHARDS} index shards)` : ''),
          );
          break;
        }
        if (Date.now() > deadline)
          throw new Error(
            `leases not shared by all six processes within 60 s: ${JSON.stringify([...leases])}`,
          );
        await sleep(300);
      }
      // Otherwise the kill would prove nothing about index shards being taken over.
      if (mode === 'index') expect(victimShards).toBeGreaterThan(0);
      await seedNow(e);
      const truth = e.truths[0]!;
      const run = begin(e);

      // Kill one of each while deletions are in full swing.
      const due = truth.dueForDeletion(Date.now()).length;
      for (;;) {
        const present = await snapshotTable(e.ddb, truth.table);
        const gone = [...truth.keys.keys()].filter((id) => !present.has(id)).length;
        if (gone >= Math.min(100, due / 4)) {
          e.note(`${gone} of ${due} initially due items deleted; SIGKILL ${victim.name} and producer-2`);
          break;
        }
        await sleep(100);
      }
      await Promise.all([victim.crash(), producers[1]!.crash()]);
      await takeProbe(e, `right after SIGKILL of ${victim.name} and producer-2`);
      await settleAndCheck(
        e,
        run,
        `scale-out with one scanner and one producer killed, ${mode} mode`,
        240_000,
      );
    }, 420_000);
  },
);
