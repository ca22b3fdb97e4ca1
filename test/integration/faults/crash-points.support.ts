import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  PRODUCER_CRASH_POINTS,
  SCANNER_CRASH_POINTS,
  takeProbe,
  type FaultEnv,
} from '../../support/fault-env';
import { ROOT_DIR } from '../../support/ports';
import { WITH_TOUCH } from '../../support/ground-truth';
import { seedInMode, type DiscoveryMode } from '../../support/discovery-mode';
import { begin, extendNow, intentKeys, settleAndCheck, setup, touchNow } from '../../support/fault-scenario';

/**
 * Invariants 1–3 when the scanner or the producer is SIGKILLed at each of its crash points and restarted without
 * the crash: the scanner and the producer run as separate real processes, only the one owning the point crashes.
 * A probe right after the crash checks publish-before-delete at that instant; background probes check it during
 * the whole run; the final check compares the table and the whole topic with the ground truth.
 *
 * Both discovery modes (scan and index), every point and scenario in each: crash-points-{scanner,producer}.{scan,index}.test.ts
 * each run one family in one mode, so the four run side by side (one stack per jest worker). `scanner.after-page` is declared once per
 * discovery path (segment-worker.ts, index-worker.ts) and only index-worker.ts's is reached in index mode (the sweep
 * is a day away); `scanner.after-mark-write` is the shared mark writer, but what the next owner does differs (the
 * index cursor lives in memory: it restarts from the lowest expiry). The producer's code is the same in both modes,
 * yet its points still run in both: what its recovery meets is not (an item under a stuck intent is still in the
 * index and found again, an extended or touched item moves in or stays in it, marks come at another pace and
 * grouping), and the items it deletes and publishes carry the index's shard attribute.
 */

const CRASH_TIMEOUT_MS = 60_000;
const SETTLE_MS = 120_000;

/** Which hit of each point to crash at: a later hit crashes mid-run rather than on the first batch. */
const HIT: Record<string, number> = {
  'scanner.after-page': 2,
  'scanner.after-mark-write': 2,
  'producer.after-intent': 1,
  'producer.after-publish': 2,
  'producer.after-published-state': 1,
  'producer.after-delete': 3,
  'producer.before-cleanup': 2,
};

/**
 * The scanner's scenarios spread the 'soon' expiries over 20 s (the default is 2–6 s after seeding): on a loaded
 * machine the scanner process can take longer than that to start, and then marks every due item in its first write
 * (nothing is marked again while marked lately), so a second mark write never came (seen in both modes).
 */
const SCANNER_SOON_MS: [number, number] = [2000, 20_000];

const declaredIn = (files: string[]): string[] => [
  ...new Set(
    files.flatMap((f) =>
      [...readFileSync(resolve(ROOT_DIR, f), 'utf8').matchAll(/crashPoint\('([a-z.-]+)'\)/g)].map(
        (m) => m[1] as string,
      ),
    ),
  ),
];

/** The scenario lists match the crash points the code declares (mode-independent: run by one file). */
export function crashPointCoverage(): void {
  describe('crash points: the scenarios cover the code', () => {
    it('covers every crash point the code declares, in both discovery modes', () => {
      // The lists the scenarios below iterate over must match the points in scanner/ and producer/.
      const declared = declaredIn([
        'scanner/segment-worker.ts',
        'scanner/index-worker.ts',
        'scanner/mark-writer.ts',
        'producer/batch/intents.ts',
        'producer/batch/publish.ts',
        'producer/batch/delete.ts',
        'producer/batch/corrections.ts',
        'producer/batch/cleanup.ts',
      ]);
      expect(declared.sort()).toEqual([...SCANNER_CRASH_POINTS, ...PRODUCER_CRASH_POINTS].sort());
      // Index discovery's own points and the mark writer's are all run in index mode.
      expect(declaredIn(['scanner/index-worker.ts', 'scanner/mark-writer.ts']).sort()).toEqual(
        [...SCANNER_CRASH_POINTS].sort(),
      );
    });
  });
}

/**
 * One family of crash-point scenarios in one discovery mode: `scanner` (the scanner's points), `producer` (the
 * producer's points that a plain run reaches) or `scripted` (its retraction and corrected-witness points, which need
 * a run steered between two crashes).
 */
export function crashPointSuite(mode: DiscoveryMode, family: 'scanner' | 'producer' | 'scripted'): void {
  describe(`crash points, ${mode} mode, ${family}: SIGKILL, restart, nothing lost`, () => {
    let env: FaultEnv | undefined;
    afterEach(async () => {
      await env?.cleanup();
      env = undefined;
    });

    if (family === 'scanner') {
      it.each(SCANNER_CRASH_POINTS.map((p) => [p]))(
        'scanner killed at %s',
        async (point) => {
          const e = (env = await setup(
            [
              {
                prefix: 'fcs',
                seed: seedInMode(mode, 1000 + point.length),
                seedOptions: { soonMs: SCANNER_SOON_MS },
              },
            ],
            {},
            { mode },
          ));
          const run = begin(e);
          const crashing = e.spawn('scanner-1', ['scanner'], {
            TTLSTREAM_CRASH_AT: `${point}@${HIT[point] ?? 1}`,
          });
          e.spawn('producer-1', ['producer']);
          await crashing.crashedAt(point, CRASH_TIMEOUT_MS);
          e.note(`scanner-1 crashed at ${point}`);
          await takeProbe(e, `right after the crash at ${point}`);
          e.spawn('scanner-2', ['scanner']);
          await settleAndCheck(e, run, `scanner killed at ${point}`, SETTLE_MS);
        },
        240_000,
      );
    }

    if (family === 'producer') {
      // The retraction points need a deletion that is being retracted: scenarios below and in event-ids.test.ts.
      const simple = PRODUCER_CRASH_POINTS.filter(
        (p) => p !== 'producer.after-retract' && p !== 'producer.after-retracted-state',
      );
      it.each(simple.map((p) => [p]))(
        'producer killed at %s',
        async (point) => {
          const e = (env = await setup(
            [{ prefix: 'fcp', seed: seedInMode(mode, 2000 + point.length) }],
            {},
            { mode },
          ));
          const run = begin(e);
          e.spawn('scanner-1', ['scanner']);
          const crashing = e.spawn('producer-1', ['producer'], {
            TTLSTREAM_CRASH_AT: `${point}@${HIT[point] ?? 1}`,
          });
          await crashing.crashedAt(point, CRASH_TIMEOUT_MS);
          e.note(`producer-1 crashed at ${point}`);
          await takeProbe(e, `right after the crash at ${point}`);
          e.spawn('producer-2', ['producer']);
          await settleAndCheck(e, run, `producer killed at ${point}`, SETTLE_MS);
        },
        240_000,
      );
    }

    if (family === 'scripted') {
      it('producer killed at producer.after-retract (published REMOVEs of items extended while it was down)', async () => {
        // A retraction needs an intent whose item changed. Crash after publishing (intents still INTENT), extend
        // those items while no producer runs, then the restarted producer must retract their REMOVEs: crash it right
        // after it published the retractions, restart once more.
        const e = (env = await setup([{ prefix: 'fcr', seed: seedInMode(mode, 3001) }], {}, { mode }));
        const truth = e.truths[0]!;
        const run = begin(e);
        e.spawn('scanner-1', ['scanner']);
        const first = e.spawn('producer-1', ['producer'], { TTLSTREAM_CRASH_AT: 'producer.after-publish@1' });
        await first.crashedAt('producer.after-publish', CRASH_TIMEOUT_MS);
        await takeProbe(e, 'right after the crash at producer.after-publish');
        const pending = await intentKeys(e, truth, 'INTENT');
        let extended = 0;
        for (const pk of pending) if (await extendNow(e, truth, pk)) extended++;
        e.note(
          `producer-1 crashed after publishing; extended ${extended} of ${pending.length} items with an intent`,
        );
        expect(extended).toBeGreaterThan(0);

        const second = e.spawn('producer-2', ['producer'], {
          TTLSTREAM_CRASH_AT: 'producer.after-retract@1',
        });
        await second.crashedAt('producer.after-retract', CRASH_TIMEOUT_MS);
        e.note('producer-2 crashed right after publishing retractions');
        await takeProbe(e, 'right after the crash at producer.after-retract');
        e.spawn('producer-3', ['producer']);
        await settleAndCheck(e, run, 'producer killed at producer.after-retract', SETTLE_MS);
      }, 240_000);

      it('producer killed between witnessing corrected deletions and publishing the corrections', async () => {
        // Freeze the producer after its REMOVEs are published, change another attribute of those items (still
        // expired, so the deletes go ahead with images that differ from the published ones), let it delete and
        // witness, and kill it before the corrections go out: the restarted producer must publish them from the
        // journal, so the effective records carry the images actually deleted.
        // One shard: one batch in flight, so the SIGKILL cannot land inside another batch's deletes (the named
        // delete-to-witness window); the writer's own touches (WITH_TOUCH) must be corrected too.
        const e = (env = await setup(
          [{ prefix: 'fcw', seed: seedInMode(mode, 3101), counts: WITH_TOUCH }],
          { producer: { shards: 1 } },
          { mode },
        ));
        const truth = e.truths[0]!;
        const run = begin(e);
        e.spawn('scanner-1', ['scanner']);
        const first = e.spawn('producer-1', ['producer'], {
          TTLSTREAM_CRASH_AT: 'producer.after-published-state@1:stop,producer.after-witness@1',
        });
        await first.stoppedAt('producer.after-published-state', CRASH_TIMEOUT_MS);
        const published = await intentKeys(e, truth, 'PUBLISHED');
        let touched = 0;
        for (const pk of published) if (await touchNow(e, truth, pk)) touched++;
        e.note(
          `producer-1 frozen after publishing; touched ${touched} of ${published.length} published items`,
        );
        expect(touched).toBeGreaterThan(0);
        first.resume();
        await first.crashedAt('producer.after-witness', CRASH_TIMEOUT_MS);
        await takeProbe(e, 'right after the crash at producer.after-witness');
        e.spawn('producer-2', ['producer']);
        await settleAndCheck(e, run, 'producer killed after witnessing corrected deletions', SETTLE_MS);
      }, 240_000);
    }
  });
}
