import { createHash } from 'node:crypto';
import {
  claimBeyondTopic,
  readPartitionHistory,
  recentDedupKeys,
  BLOCK,
  type ManifestEntry,
} from '../../../archive/history';
import { prepareRow, dedupKeyOf } from '../../../archive/rows';
import { planRoll, manifestOf } from '../../../archive/roll';
import {
  besideIndexPathFor,
  encodeArchiveJson,
  indexPathFor,
  manifestPath,
  manifestPrefix,
  type Manifest,
} from '../../../archive/storage';
import { RollCancelledError, writeRoll } from '../../../archiver/writer';
import { decodeContainer } from '../../../archive/format/avro-container';
import { silentLogger } from '../../../core/logger';
import { toArchived, type AvroArchivedRecord } from '../../../schemas';
import { makeRecord, MemoryStorage } from '../../support/archive-fixture';

const T = 'topic';
const H = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

function rows(from: number, to: number, table = (i: number) => (i % 2 ? 'orders' : 'users')) {
  const out = [];
  for (let i = from; i <= to; i++) {
    const t = table(i);
    out.push(
      prepareRow(
        toArchived(
          { kind: 'remove', record: makeRecord(t, i, H + i, 10) },
          { topic: T, partition: 0, offset: String(i), timestamp: '1' },
        ),
      ),
    );
  }
  return out;
}

describe('writeRoll: the manifest state machine', () => {
  it('writes manifest(writing) → data files → key indexes → manifest(complete)', async () => {
    const s = new MemoryStorage();
    const plan = planRoll(T, 0, 0n, 9n, rows(0, 9));
    const result = await writeRoll(s, plan);
    const puts = s.ops.filter((o) => o.startsWith('put ')).map((o) => o.slice(4));
    const kind = (p: string): string =>
      p.startsWith('_manifest/') ? 'manifest' : p.endsWith('.idx.json') ? 'index' : 'data';
    expect(puts.map(kind)).toEqual(['manifest', 'data', 'data', 'index', 'index', 'manifest']);
    const sealed = s.json(plan.manifestPath) as Manifest;
    expect(sealed).toMatchObject(manifestOf(plan, 'complete'));
    // Sealed: each file's digest, size, row count and eventID range; the first roll links to nothing.
    expect(sealed.prev).toBeNull();
    expect(sealed.digests?.map((d) => d.path)).toEqual(sealed.files);
    for (const [i, d] of (sealed.digests ?? []).entries()) {
      const f = plan.files[i];
      const body = s.objects.get(d.path) as Buffer;
      expect(d.sha256).toBe(createHash('sha256').update(body).digest('hex'));
      expect(d.bytes).toBe(body.length);
      expect(d.rows).toBe(f?.rows.length);
      expect([d.firstEventID, d.lastEventID]).toEqual([
        f?.rows[0]?.index.eventID,
        f?.rows[(f?.rows.length ?? 0) - 1]?.index.eventID,
      ]);
      const idx = s.objects.get(indexPathFor(d.path)) as Buffer;
      expect(d.index.sha256).toBe(createHash('sha256').update(idx).digest('hex'));
    }
    expect(result.link).toEqual({
      path: plan.manifestPath,
      sha256: createHash('sha256')
        .update(s.objects.get(plan.manifestPath) as Buffer)
        .digest('hex'),
    });
    expect(result.files).toBe(2);
    const file = plan.files[0];
    const decoded = await decodeContainer<AvroArchivedRecord>(s.objects.get(file?.path ?? '') as Buffer);
    expect(decoded.codec).toBe('deflate');
    expect(decoded.rows.map((r) => r.offset)).toEqual(file?.rows.map((r) => r.offset.toString()));
  });

  it('awaits the ownership fence before each manifest write, and writes nothing when it fails', async () => {
    const s = new MemoryStorage();
    const plan = planRoll(T, 0, 0n, 9n, rows(0, 9));
    await writeRoll(s, plan, {
      fence: async () => {
        s.ops.push('fence');
      },
    });
    const seq = s.ops.map((o) =>
      o === 'fence' ? 'fence' : o.startsWith('put _manifest') ? 'manifest' : 'file',
    );
    expect(seq).toEqual(['fence', 'manifest', 'file', 'file', 'file', 'file', 'fence', 'manifest']);
    const t = new MemoryStorage();
    await expect(
      writeRoll(t, plan, {
        fence: async () => {
          throw new Error('REBALANCE_IN_PROGRESS');
        },
      }),
    ).rejects.toThrow('REBALANCE_IN_PROGRESS');
    expect(t.objects.size).toBe(0);
  });

  it('leaves the manifest `writing` when interrupted, so recovery knows the exact range', async () => {
    const s = new MemoryStorage();
    const plan = planRoll(T, 0, 0n, 9n, rows(0, 9));
    let steps = 0;
    await expect(
      writeRoll(s, plan, {
        checkpoint: () => {
          if (++steps === 3) throw new RollCancelledError();
        },
      }),
    ).rejects.toThrow(RollCancelledError);
    expect((s.json(plan.manifestPath) as { state: string }).state).toBe('writing');
    const history = await readPartitionHistory(s, T, 0, null, silentLogger);
    expect(history.completeEnd).toBeNull();
    expect(history.pending.map((e) => [e.first, e.last])).toEqual([[0n, 9n]]);
  });

  it('a storage failure mid-roll also leaves `writing`; the retry completes it in place', async () => {
    const s = new MemoryStorage();
    const plan = planRoll(T, 0, 0n, 9n, rows(0, 9));
    s.failOnce = /\.idx\.json$/;
    await expect(writeRoll(s, plan)).rejects.toThrow(/injected/);
    expect((s.json(plan.manifestPath) as { state: string }).state).toBe('writing');
    await writeRoll(s, plan);
    expect((s.json(plan.manifestPath) as { state: string }).state).toBe('complete');
    expect([...s.objects.keys()].filter((k) => !k.startsWith('_manifest'))).toHaveLength(4);
  });

  it('a redo removes files of the earlier attempt that the new plan does not have', async () => {
    const s = new MemoryStorage();
    const first = planRoll(T, 0, 0n, 9n, rows(0, 9));
    await writeRoll(s, first, { checkpoint: () => undefined });
    // Pretend the first attempt crashed before completing, and the redo now skips every 'users' row. That
    // attempt was a version's before the _index/ layout: its indexes sit beside the data files.
    await s.put(first.manifestPath, encodeArchiveJson(manifestOf(first, 'writing')));
    for (const f of first.files) {
      await s.put(besideIndexPathFor(f.path), s.objects.get(f.indexPath) as Buffer);
      await s.delete(f.indexPath);
    }
    const redo = planRoll(
      T,
      0,
      0n,
      9n,
      rows(0, 9).filter((r) => r.table === 'orders'),
    );
    await writeRoll(s, redo, { previous: manifestOf(first, 'writing') });
    const files = [...s.objects.keys()].filter((k) => !k.startsWith('_manifest')).sort();
    // The orders file and its index under _index/: nothing of users, no index left beside.
    expect(files).toEqual(redo.files.flatMap((f) => [f.indexPath, f.path]).sort());
    expect(redo.files.map((f) => f.path).every((f) => f.startsWith('table=orders/'))).toBe(true);
    expect(files).toHaveLength(2);
  });
});

describe('partition history', () => {
  async function complete(s: MemoryStorage, first: number, last: number): Promise<void> {
    await writeRoll(s, planRoll(T, 0, BigInt(first), BigInt(last), rows(first, last)));
  }

  it('finds where complete rolls end and which `writing` roll to redo', async () => {
    const s = new MemoryStorage();
    await complete(s, 0, 4);
    await complete(s, 5, 9);
    const pending = planRoll(T, 0, 10n, 14n, rows(10, 14));
    await s.put(pending.manifestPath, encodeArchiveJson(manifestOf(pending, 'writing')));
    const h = await readPartitionHistory(s, T, 0, 5n, silentLogger);
    expect(h.completeEnd).toBe(10n);
    expect(h.pending.map((e) => e.path)).toEqual([pending.manifestPath]);
    expect(h.complete.map((e) => e.first)).toEqual([5n, 0n]);
  });

  it('marks an abandoned `writing` roll stale only when complete rolls cover every offset of it', async () => {
    const s = new MemoryStorage();
    await complete(s, 0, 9);
    await complete(s, 10, 19);
    await complete(s, 40, 49); // 20..39 lost
    const writing = (first: bigint, last: bigint) =>
      s.put(
        manifestPath(T, 0, first, last),
        encodeArchiveJson({
          state: 'writing',
          first: String(first),
          last: String(last),
          files: [],
          records: 0,
        }),
      );
    await writing(5n, 14n); // covered by 0..9 and 10..19
    await writing(18n, 25n); // reaches into the lost range: its rows may exist nowhere else
    const h = await readPartitionHistory(s, T, 0, null, silentLogger);
    expect(h.stale.map((e) => [e.first, e.last])).toEqual([[5n, 14n]]);
    expect(h.pending).toEqual([]);
  });

  it('ignores a `writing` manifest already covered by complete rolls, and damaged manifests', async () => {
    const s = new MemoryStorage();
    await complete(s, 0, 9);
    await s.put(
      manifestPath(T, 0, 0n, 4n),
      encodeArchiveJson({ state: 'writing', first: '0', last: '4', files: [], records: 0 }),
    );
    await s.put(manifestPath(T, 0, 20n, 30n), Buffer.from('{not json'));
    await s.put(
      manifestPath(T, 0, 40n, 50n),
      encodeArchiveJson({ state: 'complete', first: '41', last: '50', files: [], records: 0 }),
    );
    const h = await readPartitionHistory(s, T, 0, null, silentLogger);
    expect(h.pending).toEqual([]);
    expect(h.completeEnd).toBe(10n);
  });

  it('lists only the blocks around the committed offset, following rolls across block ends', async () => {
    const s = new MemoryStorage();
    const put = async (first: bigint, last: bigint): Promise<void> =>
      s.put(
        manifestPath(T, 0, first, last),
        encodeArchiveJson({
          state: 'complete',
          first: String(first),
          last: String(last),
          files: [],
          records: 0,
        }),
      );
    await put(0n, 9n); // far behind: must not be read
    await put(5n * BLOCK - 10n, 5n * BLOCK + 5n); // spans into block 5
    await put(5n * BLOCK + 6n, 6n * BLOCK + 1n); // spans into block 6
    await put(6n * BLOCK + 2n, 6n * BLOCK + 9n);
    s.ops.length = 0;
    const h = await readPartitionHistory(s, T, 0, 5n * BLOCK, silentLogger);
    expect(h.completeEnd).toBe(6n * BLOCK + 10n);
    const lists = s.ops.filter((o) => o.startsWith('list '));
    expect(lists).toHaveLength(3); // blocks 4, 5 and 6
    expect(lists.every((l) => l.startsWith(`list ${manifestPrefix(T, 0)}`))).toBe(true);
    expect(h.complete.some((e) => e.first === 0n)).toBe(false);
  });

  it('rebuilds the dedup window from complete rolls only, newest rolls first, oldest ids first', async () => {
    const s = new MemoryStorage();
    await complete(s, 0, 4);
    await complete(s, 5, 9);
    const pending = planRoll(T, 0, 10n, 14n, rows(10, 14));
    await writeRoll(s, pending);
    await s.put(pending.manifestPath, encodeArchiveJson(manifestOf(pending, 'writing')));
    const h = await readPartitionHistory(s, T, 0, null, silentLogger);
    const keys = await recentDedupKeys(s, h, 1000, 10, silentLogger);
    const want = rows(0, 9).map((r) => r.dedupKey);
    expect(new Set(keys)).toEqual(new Set(want));
    expect(keys).toHaveLength(10);
    // Only the newest roll when the limit is small.
    const few = await recentDedupKeys(s, h, 3, 10, silentLogger);
    expect(new Set(few)).toEqual(new Set(rows(5, 9).map((r) => r.dedupKey)));
    expect(dedupKeyOf('remove', 'x')).not.toBe(dedupKeyOf('retract', 'x'));
  });
});

describe("claimBeyondTopic: is this history the topic's?", () => {
  const writing = (first: bigint, last: bigint): ManifestEntry =>
    ({
      path: `m-${first}`,
      first,
      last,
      manifest: { state: 'writing', first: String(first), last: String(last), files: [], records: 0 },
    }) as ManifestEntry;

  it('accepts claims up to the high watermark', () => {
    expect(claimBeyondTopic(null, { completeEnd: null, pending: [] }, 0n)).toBeNull();
    expect(claimBeyondTopic(30n, { completeEnd: 30n, pending: [] }, 30n)).toBeNull();
    expect(claimBeyondTopic(10n, { completeEnd: 20n, pending: [writing(20n, 29n)] }, 31n)).toBeNull();
  });

  it('names the highest claim beyond it: complete rolls, writing rolls, or the committed offset', () => {
    expect(claimBeyondTopic(null, { completeEnd: 45n, pending: [] }, 5n)).toBe(45n);
    expect(claimBeyondTopic(0n, { completeEnd: 20n, pending: [writing(20n, 39n)] }, 25n)).toBe(40n);
    expect(claimBeyondTopic(12n, { completeEnd: null, pending: [] }, 3n)).toBe(12n);
  });
});
