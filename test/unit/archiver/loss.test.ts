import { acknowledgeLoss } from '../../../archive-tools/loss-ack';
import { LossLedger, unacknowledged, type Loss } from '../../../archive/ledgers/loss';
import { LossReporter } from '../../../archiver/loss';
import { LossAckSchema, lossAckPath, lossPath, parseArchiveJson } from '../../../archive/storage';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { MemoryStorage } from '../../support/archive-fixture';

const T = 'orders.remove';

function loss(partition: number, from: bigint, to: bigint, topic = T): Loss {
  return { topic, partition, from, to, records: to - from + 1n, path: lossPath(topic, partition, from, to) };
}

/** ttlstream_archiver_loss per `<topic>/<partition>`. */
async function lossGauge(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.archiveLoss.get()).values)
    out[`${String(v.labels.topic)}/${String(v.labels.partition)}`] = v.value;
  return out;
}

const ack = (partition: number, through: bigint) => ({
  topic: T,
  partition,
  through: through.toString(),
  losses: [],
  ackedAtMs: 1,
  ackedBy: 'cli:test',
});

describe('unacknowledged: what an acknowledgement covers', () => {
  it('covers the losses of its partition up to its offset, not a later loss nor another partition', () => {
    const losses = [loss(0, 20n, 39n), loss(0, 60n, 79n), loss(1, 5n, 9n), loss(0, 20n, 39n, 'other.remove')];
    expect(unacknowledged(losses, [ack(0, 39n)])).toEqual([losses[1], losses[2], losses[3]]);
    // The highest acknowledgement of a partition counts, whatever the order they were written in.
    expect(unacknowledged(losses, [ack(0, 79n), ack(0, 39n), ack(1, 9n)])).toEqual([losses[3]]);
    expect(unacknowledged(losses, [])).toEqual(losses);
  });
});

describe('LossReporter: ttlstream_archiver_loss follows the archive and the acknowledgements', () => {
  beforeEach(() => metrics.archiveLoss.reset());

  it('fires on a loss, clears on acknowledgement on every archiver, fires again on a later loss, survives a restart', async () => {
    const storage = new MemoryStorage();
    const a = new LossReporter(storage, silentLogger);
    const b = new LossReporter(storage, silentLogger);
    await a.report(T, 0, 20n, 39n, 'assignment');
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });
    // Another archiver (a replica that never saw the loss) reports it too, from the archive.
    metrics.archiveLoss.reset();
    await b.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });

    const dry = await acknowledgeLoss(storage, { topic: T, actor: 'cli:ops', dryRun: true });
    expect(dry.acks.map((x) => [x.path, x.ack.through])).toEqual([[lossAckPath(T, 0, 39n), '39']]);
    expect([...storage.objects.keys()].filter((k) => k.startsWith('_loss-ack/'))).toEqual([]);
    await b.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });

    const done = await acknowledgeLoss(storage, { topic: T, actor: 'cli:ops', note: 'INC-1', dryRun: false });
    const path = lossAckPath(T, 0, 39n);
    expect(done.acks.map((x) => x.path)).toEqual([path]);
    expect(parseArchiveJson(LossAckSchema, storage.objects.get(path) as Buffer, path)).toMatchObject({
      topic: T,
      partition: 0,
      through: '39',
      losses: [{ path: lossPath(T, 0, 20n, 39n), from: '20', to: '39', records: '20' }],
      ackedBy: 'cli:ops',
      note: 'INC-1',
    });
    await a.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0 });
    await b.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0 });
    // Nothing left to acknowledge: nothing written.
    expect((await acknowledgeLoss(storage, { topic: T, actor: 'cli:ops', dryRun: false })).acks).toEqual([]);

    // A restarted archiver detects the same (acknowledged) range again: no alert.
    const restarted = new LossReporter(storage, silentLogger);
    await restarted.report(T, 0, 20n, 39n, 'assignment');
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0 });

    // A new loss after the acknowledgement is not hidden by it, and is acknowledged on its own.
    await restarted.report(T, 0, 60n, 69n, 'monitor');
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });
    await a.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });
    const second = await acknowledgeLoss(storage, {
      topic: T,
      partition: 0,
      actor: 'cli:ops',
      dryRun: false,
    });
    expect(second.acks.map((x) => [x.ack.through, x.ack.losses.map((l) => l.from)])).toEqual([
      ['69', ['60']],
    ]);
    await a.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0 });
  });

  it('acknowledges one partition, or every partition of the topic, and no other topic', async () => {
    const storage = new MemoryStorage();
    const r = new LossReporter(storage, silentLogger);
    await r.report(T, 0, 1n, 2n, 'monitor');
    await r.report(T, 1, 3n, 4n, 'monitor');
    await r.report(T, 2, 5n, 6n, 'monitor');
    await r.report('carts.remove', 0, 7n, 8n, 'monitor');
    await acknowledgeLoss(storage, { topic: T, partition: 1, actor: 'cli:ops', dryRun: false });
    await r.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1, [`${T}/1`]: 0, [`${T}/2`]: 1, 'carts.remove/0': 1 });
    const all = await acknowledgeLoss(storage, { topic: T, actor: 'cli:ops', dryRun: false });
    expect(all.acks.map((x) => x.ack.partition)).toEqual([0, 2]);
    await r.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0, [`${T}/1`]: 0, [`${T}/2`]: 0, 'carts.remove/0': 1 });
  });

  it('keeps a loss whose record could not be written, writes it later, and keeps its state while the archive cannot be read', async () => {
    const storage = new MemoryStorage();
    const r = new LossReporter(storage, silentLogger);
    storage.failAll = () => Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
    await r.report(T, 0, 20n, 39n, 'monitor');
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });
    expect(storage.objects.size).toBe(0);
    storage.failAll = null;
    await r.refresh();
    expect([...storage.objects.keys()]).toEqual([lossPath(T, 0, 20n, 39n)]);

    await acknowledgeLoss(storage, { topic: T, actor: 'cli:ops', dryRun: false });
    await r.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0 });
    // The archive cannot be listed: the alert keeps what was read last (acknowledged), and a new loss still fires.
    const list = storage.list.bind(storage);
    storage.list = async function* (): AsyncIterable<string> {
      yield* [];
      throw Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
    };
    await r.refresh();
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 0 });
    await r.report(T, 0, 60n, 69n, 'monitor');
    expect(await lossGauge()).toEqual({ [`${T}/0`]: 1 });
    storage.list = list;
  });

  it('reads each record once: the ledger lists every refresh and reads only records it has not read', async () => {
    const storage = new MemoryStorage();
    const r = new LossReporter(storage, silentLogger);
    await r.report(T, 0, 1n, 2n, 'monitor');
    const ledger = new LossLedger(storage);
    await ledger.read();
    const gets: string[] = [];
    const get = storage.get.bind(storage);
    storage.get = (path: string) => {
      gets.push(path);
      return get(path);
    };
    await ledger.read();
    expect(gets).toEqual([]);
    await r.report(T, 0, 3n, 4n, 'monitor');
    gets.length = 0;
    expect((await ledger.read()).losses.map((l) => l.from)).toEqual([1n, 3n]);
    expect(gets).toEqual([lossPath(T, 0, 3n, 4n)]);
  });
});
