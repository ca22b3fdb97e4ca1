import { setTimeout as sleep } from 'node:timers/promises';
import { faultSeeds, mongoModel, Rng, scaleCounts } from '../../support/ground-truth';
import { takeProbe, type FaultEnv, type PipelineProc } from '../../support/fault-env';
import { seedInMode, type DiscoveryMode } from '../../support/discovery-mode';
import { begin, settleAndCheck, setup } from '../../support/fault-scenario';

/**
 * Invariants 1–3 under SIGKILLs at random moments: two scanner+producer processes on two tables (dynamodb and mongo
 * mode), one of them killed and replaced several times while deletions, retractions and the concurrent writer are
 * in flight. The seed fixes the tables, the writer's schedule and the kill schedule; the seeds are printed so a
 * failure can be replayed with TTLSTREAM_FAULT_SEEDS=<seed>[,<seed>...]. Both discovery modes (scan and index), each seed in
 * each (index mode seeds its tables with `seedInMode`; the kill schedule is the seed's in both).
 */

const SEEDS = faultSeeds();
process.stdout.write(
  `[fault] random-kill seeds: ${SEEDS.join(',')} (replay with TTLSTREAM_FAULT_SEEDS=${SEEDS.join(',')})\n`,
);

/** Every seed in one discovery mode (random-kills.{scan,index}.test.ts). */
export function randomKillSuite(mode: DiscoveryMode): void {
  describe('random SIGKILLs of pipeline processes', () => {
    let env: FaultEnv | undefined;
    afterEach(async () => {
      await env?.cleanup();
      env = undefined;
    });

    it.each(SEEDS.map((s) => [s, mode] as const))(
      'seed %d, %s mode',
      async (seed, mode) => {
        const rng = new Rng(seed ^ 0x5eed);
        const e = (env = await setup(
          [
            { prefix: 'frk', seed: seedInMode(mode, seed), counts: scaleCounts(2) },
            {
              prefix: 'frm',
              seed: seedInMode(mode, (seed + 1) >>> 0),
              model: mongoModel(),
              counts: scaleCounts(1),
            },
          ],
          { scanner: { readRateLimit: 250 } },
          { mode },
        ));
        const run = begin(e);
        let spawned = 0;
        const next = (): PipelineProc => e.spawn(`proc-${++spawned}`, ['scanner', 'producer']);
        const live = [next(), next()];
        const kills = rng.int(3, 5);
        for (let i = 0; i < kills; i++) {
          await sleep(rng.int(300, 3500));
          const slot = rng.int(0, live.length - 1);
          const victim = live[slot] as PipelineProc;
          await victim.crash();
          e.note(`SIGKILL ${victim.name}`);
          await takeProbe(e, `right after SIGKILL of ${victim.name}`);
          await sleep(rng.int(0, 1500));
          live[slot] = next();
        }
        await settleAndCheck(e, run, `random kills, seed ${seed}, ${mode} mode`, 180_000);
      },
      300_000,
    );
  });
}
