import { setTimeout as sleep } from 'node:timers/promises';
import { snapshotTable, scaleCounts, WITH_TOUCH } from '../../support/ground-truth';
import { takeProbe, within, type FaultEnv } from '../../support/fault-env';
import { stackCtl } from '../../support/stack';
import { seedInMode, type DiscoveryMode } from '../../support/discovery-mode';
import { begin, settleAndCheck, setup } from '../../support/fault-scenario';

/**
 * Invariants 1–3 when a service restarts under the running pipeline: the Kafka broker (the producer cannot publish
 * for a while; it must not delete without publishing, and must resume), and the DynamoDB server (leases cannot be
 * renewed, requests fail mid-flight with unknown outcome; it keeps its data on disk). The pipeline processes must
 * ride it out on their own: a process dying counts as a failure. Both discovery modes (scan and index): in index mode the
 * leases are index shards, the queries' cursors are lost with a failed query, and the index itself must survive.
 */

/** A paced scanner, so that deletions are still going on when the service goes down. */
const PACED = { scanner: { readRateLimit: 150 } };

async function waitForDeletions(env: FaultEnv, atLeast: number, timeoutMs: number): Promise<number> {
  const truth = env.truths[0]!;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const present = await snapshotTable(env.ddb, truth.table);
    const gone = [...truth.keys.keys()].filter((id) => !present.has(id)).length;
    if (gone >= atLeast) return gone;
    if (Date.now() > deadline)
      throw new Error(`only ${gone} deletions within ${timeoutMs} ms, wanted ${atLeast}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A broker that has just started answers "not the leader" until its partitions have leaders again. */
async function endOffsetsOnceLeadersAreBack(env: FaultEnv): Promise<Map<number, number>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await env.stream.endOffsets();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

export function serviceRestartSuite(mode: DiscoveryMode): void {
  describe(`service restarts mid-run, ${mode} mode`, () => {
    let env: FaultEnv | undefined;
    afterEach(async () => {
      await env?.cleanup();
      env = undefined;
    });

    it('Kafka broker restart: nothing deleted without its record, everything finished afterwards', async () => {
      const e = (env = await setup(
        [{ prefix: 'fkr', seed: seedInMode(mode, 5101), counts: scaleCounts(4, WITH_TOUCH) }],
        PACED,
        { mode },
      ));
      const truth = e.truths[0]!;
      const due = truth.dueForDeletion(Date.now()).length;
      const run = begin(e);
      e.spawn('scanner-1', ['scanner']);
      e.spawn('producer-1', ['producer']);
      const gone = await waitForDeletions(e, 20, 60_000);
      e.note(`${gone} of ${due} initially due items deleted; stopping Kafka`);
      await stackCtl('stop', 'kafka');
      e.note('Kafka is down; the pipeline keeps running');
      await sleep(4000);

      // Publish-before-delete during the outage, exactly: nothing can be appended while the broker is down, and the
      // pipeline is frozen from before the broker starts until its end offsets are read, so every key absent now must
      // have its REMOVE below those offsets.
      const scanStartedMs = Date.now();
      const present = await snapshotTable(e.ddb, truth.table);
      const absent = [...truth.keys.keys()].filter((id) => !present.has(id));
      for (const p of e.procs) p.pause();
      e.note(`${absent.length} keys absent during the outage; pipeline frozen (SIGSTOP); starting Kafka`);
      try {
        await stackCtl('start', 'kafka');
        const highWater = await endOffsetsOnceLeadersAreBack(e);
        e.probes.push({
          scanStartedMs,
          table: truth.table,
          absent,
          highWater,
          label: 'during the Kafka outage',
        });
      } finally {
        for (const p of e.procs) p.resume();
      }
      e.note('Kafka is back; pipeline resumed (SIGCONT)');
      await takeProbe(e, 'right after the Kafka restart');
      await settleAndCheck(e, run, `Kafka restart mid-run, ${mode} mode`, 240_000);
    }, 420_000);

    it('DynamoDB server restart: leases, marks, intents and items survive; nothing lost or doubled', async () => {
      const e = (env = await setup(
        [{ prefix: 'fdr', seed: seedInMode(mode, 5202), counts: scaleCounts(4) }],
        PACED,
        { mode },
      ));
      const due = e.truths[0]!.dueForDeletion(Date.now()).length;
      const run = begin(e);
      e.spawn('scanner-1', ['scanner']);
      e.spawn('producer-1', ['producer']);
      const gone = await waitForDeletions(e, 20, 60_000);
      e.note(`${gone} of ${due} initially due items deleted; restarting DynamoDB`);
      const restarted = await within(
        stackCtl('restart', 'dynamodb').then(() => true),
        120_000,
      );
      if (!restarted) throw new Error('infra/ctl.sh restart dynamodb did not finish within 120 s');
      e.note('DynamoDB is back');
      await takeProbe(e, 'right after the DynamoDB restart');
      await settleAndCheck(e, run, `DynamoDB restart mid-run, ${mode} mode`, 240_000);
    }, 420_000);
  });
}
