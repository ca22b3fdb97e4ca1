import { setTimeout as sleep } from 'node:timers/promises';
import type { ManifestEntry } from '../../../archive/history';
import { catchUpRollBytes } from '../../../archiver/partition';
import { prepareRow, rowBuffer, type PreparedRow } from '../../../archive/rows';
import { manifestOf, planRoll } from '../../../archive/roll';
import { toArchived } from '../../../schemas';
import { metrics } from '../../../core/metrics';
import { archiveWorker, makeRecord, MemoryStorage } from '../../support/archive-fixture';
import { waitFor } from '../../support/wait-for';

const T = 'topic';
const H = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

function row(i: number): PreparedRow {
  return prepareRow(
    toArchived(
      { kind: 'remove', record: makeRecord('orders', i, H + i, 100) },
      { topic: T, partition: 0, offset: String(i), timestamp: String(1000 + i) },
    ),
  );
}

function setup(opts: { rollBytes?: number; rollMs?: number; start?: bigint; redo?: ManifestEntry[] } = {}) {
  const storage = new MemoryStorage();
  const commits: bigint[] = [];
  const worker = archiveWorker(storage, T, {
    ...opts,
    commit: async (o) => {
      // The commit must come after the manifest that covers it is complete.
      const complete = [...storage.objects.entries()].some(
        ([k, v]) =>
          k.startsWith('_manifest/') &&
          JSON.parse(v.toString()).state === 'complete' &&
          BigInt(JSON.parse(v.toString()).last) + 1n === o,
      );
      if (!complete) throw new Error(`commit ${o} before its manifest is complete`);
      commits.push(o);
    },
  });
  return { storage, commits, worker };
}

function manifests(s: MemoryStorage): Array<{ first: string; last: string; state: string; records: number }> {
  return [...s.objects.keys()]
    .filter((k) => k.startsWith('_manifest/'))
    .sort()
    .map((k) => s.json(k) as { first: string; last: string; state: string; records: number });
}

describe('PartitionWorker', () => {
  it('rolls by size, writes before committing, and commits the next offset', async () => {
    const { storage, commits, worker } = setup({ rollBytes: 1 });
    for (let i = 0; i < 3; i++) worker.accept(BigInt(i), row(i), 1000);
    await worker.drain();
    expect(manifests(storage).map((m) => [m.first, m.last, m.state])).toEqual([
      ['0', '0', 'complete'],
      ['1', '1', 'complete'],
      ['2', '2', 'complete'],
    ]);
    expect(commits).toEqual([1n, 2n, 3n]);
    expect(worker.archived).toBe(3n);
  });

  it('while catching up, lets a roll grow to catchUpRollBytes; otherwise rolls at rollBytes', async () => {
    const size = rowBuffer(row(0).avro).length;
    expect(catchUpRollBytes(2 * size)).toBe(8 * size);
    expect(catchUpRollBytes(64 * 1024 * 1024)).toBe(64 * 1024 * 1024);
    expect(catchUpRollBytes(8 * 1024 * 1024)).toBe(16 * 1024 * 1024);

    // Far behind the high watermark: rolls of about 4 × rollBytes.
    const behind = setup({ rollBytes: 2 * size });
    for (let i = 0; i < 16; i++) behind.worker.accept(BigInt(i), row(i), 1000, 1_000_000n);
    behind.worker.flush();
    await behind.worker.drain();
    expect(manifests(behind.storage).map((m) => [m.first, m.last])).toEqual([
      ['0', '7'],
      ['8', '15'],
    ]);
    expect(behind.commits).toEqual([8n, 16n]);

    // Near the high watermark (or none known): rolls at rollBytes.
    const live = setup({ rollBytes: 2 * size });
    for (let i = 0; i < 4; i++) live.worker.accept(BigInt(i), row(i), 1000, BigInt(i + 2));
    for (let i = 4; i < 6; i++) live.worker.accept(BigInt(i), row(i), 1000);
    await live.worker.drain();
    expect(manifests(live.storage).map((m) => [m.first, m.last])).toEqual([
      ['0', '1'],
      ['2', '3'],
      ['4', '5'],
    ]);
    expect(live.commits).toEqual([2n, 4n, 6n]);
  });

  it('rolls by age, counting offsets without rows (poison, duplicates) into the range', async () => {
    const { storage, commits, worker } = setup({ rollMs: 20 });
    worker.accept(0n, row(0), 1000);
    worker.accept(1n, null, 1001);
    worker.accept(2n, row(2), 1002);
    worker.rollIfDue();
    expect(worker.pending).toBe(true);
    await sleep(30);
    worker.rollIfDue();
    await worker.drain();
    expect(manifests(storage)).toEqual([
      expect.objectContaining({ first: '0', last: '2', state: 'complete', records: 2 }),
    ]);
    expect(commits).toEqual([3n]);
    expect(worker.pending).toBe(false);
  });

  it('ignores offsets it has already taken', async () => {
    const { storage, worker } = setup();
    worker.accept(5n, row(5), 1);
    worker.accept(5n, row(5), 1);
    worker.accept(4n, row(4), 1);
    worker.flush();
    await worker.drain();
    expect(manifests(storage)).toEqual([expect.objectContaining({ first: '0', last: '5', records: 1 })]);
  });

  it('redoes a `writing` roll over exactly its range, then goes on normally', async () => {
    const earlier = planRoll(T, 0, 10n, 14n, [10, 11, 12, 13, 14].map(row));
    const redo: ManifestEntry = {
      path: earlier.manifestPath,
      first: 10n,
      last: 14n,
      manifest: manifestOf(earlier, 'writing'),
    };
    const { storage, commits, worker } = setup({ start: 10n, redo: [redo], rollBytes: 1 });
    for (let i = 10; i <= 16; i++) worker.accept(BigInt(i), row(i), 1);
    await worker.drain();
    // Size rolls are held back during the redo so that it keeps its exact range and file names.
    expect(manifests(storage).map((m) => [m.first, m.last])).toEqual([
      ['10', '14'],
      ['15', '15'],
      ['16', '16'],
    ]);
    expect(commits).toEqual([15n, 16n, 17n]);
  });

  it('closes a redo when an offset beyond it arrives (its last message was gone)', async () => {
    const redo: ManifestEntry = {
      path: 'x',
      first: 0n,
      last: 3n,
      manifest: { state: 'writing', first: '0', last: '3', files: [], records: 0 },
    };
    const { storage, worker } = setup({ redo: [redo] });
    worker.accept(0n, row(0), 1);
    worker.accept(1n, row(1), 1);
    worker.accept(5n, row(5), 1);
    worker.flush();
    await worker.drain();
    expect(manifests(storage).map((m) => [m.first, m.last, m.records])).toEqual([
      ['0', '3', 2],
      ['4', '5', 1],
    ]);
  });

  it('asks the caller to wait while two rolls are queued, and lets it go on when one is done', async () => {
    const { worker } = setup({ rollBytes: 1 });
    expect(worker.accept(0n, row(0), 1)).toBe(false);
    expect(worker.accept(1n, row(1), 1)).toBe(true);
    await worker.room();
    await worker.drain();
  });

  it('keeps retrying a failing storage without committing, then completes', async () => {
    const { storage, commits, worker } = setup({ rollBytes: 1 });
    storage.failOnce = /\.avro$/;
    worker.accept(0n, row(0), 1);
    await worker.drain();
    expect(commits).toEqual([1n]);
    expect(manifests(storage)).toEqual([expect.objectContaining({ state: 'complete' })]);
  });

  it('counts each failed attempt by reason and reads 1 on ttlstream_archiver_roll_failing until a roll is written', async () => {
    const reason = async (r: string): Promise<number> =>
      (await metrics.archiveRollErrors.get()).values.find((v) => v.labels.reason === r)?.value ?? 0;
    const failing = async (): Promise<number | undefined> =>
      (await metrics.archiveRollFailing.get()).values.find((v) => v.labels.topic === T)?.value;
    const before = await reason('AccessDenied');
    const { storage, commits, worker } = setup({ rollBytes: 1 });
    storage.failAll = () => Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
    worker.accept(0n, row(0), 1);
    await waitFor('two failed attempts', async () => (await reason('AccessDenied')) >= before + 2, 5000, 10);
    expect(await failing()).toBe(1);
    expect(commits).toEqual([]);
    storage.failAll = null;
    await worker.drain();
    expect(commits).toEqual([1n]);
    expect(await failing()).toBe(0);

    // A file system that refuses writes is counted by its error code.
    const readOnly = setup({ rollBytes: 1 });
    const erofs = await reason('EROFS');
    readOnly.storage.failAll = () => Object.assign(new Error('read-only file system'), { code: 'EROFS' });
    readOnly.worker.accept(0n, row(0), 1);
    await waitFor('an EROFS attempt', async () => (await reason('EROFS')) > erofs, 5000, 10);
    // Given up (the partition revoked): no longer failing here; the next owner reports its own attempts.
    readOnly.worker.cancel();
    await readOnly.worker.drain();
    expect(await failing()).toBe(0);
  });

  it('when cancelled, stops at the next step and commits nothing', async () => {
    const { storage, commits, worker } = setup({ rollBytes: 1 });
    worker.accept(0n, row(0), 1);
    worker.cancel();
    await worker.drain();
    expect(commits).toEqual([]);
    expect(manifests(storage).every((m) => m.state === 'writing')).toBe(true);
  });

  it('when retired, drops its open buffer but finishes queued rolls', async () => {
    const { storage, commits, worker } = setup({ rollBytes: 150 });
    worker.accept(0n, row(0), 1); // rolls at once (row > 150 bytes)
    worker.retire();
    worker.accept(1n, row(1), 1);
    worker.flush();
    await worker.drain();
    expect(commits).toEqual([1n]);
    expect(manifests(storage)).toHaveLength(1);
  });
});
