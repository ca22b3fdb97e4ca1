import { readPartitionHistory } from '../../../../archive/history';
import { prepareRow, type PreparedRow } from '../../../../archive/rows';
import { planRoll } from '../../../../archive/roll';
import {
  encodeArchiveJson,
  indexPathFor,
  lossPath,
  manifestPrefix,
  type Manifest,
} from '../../../../archive/storage';
import { verifyArchive } from '../../../../archive-tools/verify';
import { RollCancelledError, writeRoll } from '../../../../archiver/writer';
import { silentLogger } from '../../../../core/logger';
import { toArchived } from '../../../../schemas';
import {
  archiveRows,
  archiveWorker,
  findingKinds,
  makeRecord,
  MemoryStorage,
} from '../../../support/archive-fixture';

const T = 'topic';
const H = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

function row(i: number): PreparedRow {
  const table = i % 2 ? 'orders' : 'users';
  return prepareRow(
    toArchived(
      { kind: 'remove', record: makeRecord(table, i, H + i * 900, 100) },
      { topic: T, partition: 0, offset: String(i), timestamp: String(1000 + i) },
    ),
  );
}

/** Rolls of 3 offsets each over [from..to], written by a partition worker (which links the chain). */
function archiveRange(storage: MemoryStorage, from: number, to: number): Promise<void> {
  const rows = Array.from({ length: to - from + 1 }, (_, n) => row(from + n));
  return archiveRows(storage, T, rows, { first: BigInt(from), perRoll: 3 });
}

function manifestPaths(s: MemoryStorage): string[] {
  return [...s.objects.keys()].filter((k) => k.startsWith('_manifest/')).sort();
}

function dataPaths(s: MemoryStorage): string[] {
  return [...s.objects.keys()].filter((k) => k.endsWith('.avro')).sort();
}

describe('archive verify: the hash chain and file digests', () => {
  it('passes on an archive as the archiver wrote it, and links every roll to the one before', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 11);
    const report = await verifyArchive(s);
    expect(report.findings).toEqual([]);
    expect(report.manifests).toBe(4);
    expect(report.rows).toBe(12);
    expect(report.legacy).toBe(0);
    const links = manifestPaths(s).map((p) => (s.json(p) as Manifest).prev?.path ?? null);
    expect(links).toEqual([null, ...manifestPaths(s).slice(0, 3)]);
    expect(report.heads[`${T}/0`]?.path).toBe(manifestPaths(s)[3]);
  });

  it('a new worker (after a restart) links its first roll to the last complete one', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    await archiveRange(s, 6, 8);
    expect((s.json(manifestPaths(s)[2] as string) as Manifest).prev?.path).toBe(manifestPaths(s)[1]);
    expect(await findingKinds(s)).toEqual([]);
  });

  it('a roll redone after a crash keeps the chain valid', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    // A crash after the data files: the manifest stays `writing`.
    let steps = 0;
    const plan = planRoll(T, 0, 6n, 8n, [6, 7, 8].map(row));
    await expect(
      writeRoll(s, plan, {
        checkpoint: () => {
          if (++steps === 4) throw new RollCancelledError();
        },
      }),
    ).rejects.toThrow(RollCancelledError);
    expect((await verifyArchive(s)).inProgress).toEqual([plan.manifestPath]);
    const history = await readPartitionHistory(s, T, 0, null, silentLogger);
    const worker = archiveWorker(s, T, { start: 6n, redo: history.pending });
    for (let i = 6; i <= 9; i++) worker.accept(BigInt(i), row(i), 1);
    worker.flush();
    await worker.drain();
    const report = await verifyArchive(s);
    expect(report.findings).toEqual([]);
    expect(report.inProgress).toEqual([]);
    expect(report.rows).toBe(10);
  });

  it('a gap explained by a loss record is not a finding; an unexplained one is', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 2);
    await archiveRange(s, 6, 8);
    expect(await findingKinds(s)).toEqual(['gap']);
    s.objects.set(
      lossPath(T, 0, 3n, 5n),
      encodeArchiveJson({
        topic: T,
        partition: 0,
        from: '3',
        to: '5',
        records: '3',
        detectedAtMs: 1,
        detectedBy: 'assignment',
      }),
    );
    expect(await findingKinds(s)).toEqual([]);
  });

  it('catches an altered data file', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    const p = dataPaths(s)[1] as string;
    const body = Buffer.from(s.objects.get(p) as Buffer);
    body.writeUInt8(body.readUInt8(body.length - 3) ^ 0xff, body.length - 3);
    s.objects.set(p, body);
    expect(await findingKinds(s)).toEqual(['altered-file']);
  });

  it('catches a truncated data file', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    const p = dataPaths(s)[0] as string;
    s.objects.set(p, (s.objects.get(p) as Buffer).subarray(0, 40));
    expect(await findingKinds(s)).toEqual(['truncated-file']);
  });

  it('catches a missing data file, and a missing or altered key index', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    const [a, b, c] = dataPaths(s) as [string, string, string];
    s.objects.delete(a);
    s.objects.delete(indexPathFor(b));
    const idx = JSON.parse((s.objects.get(indexPathFor(c)) as Buffer).toString()) as { rows: unknown[] };
    idx.rows = [];
    s.objects.set(indexPathFor(c), encodeArchiveJson(idx));
    const findings = (await verifyArchive(s)).findings.map((f) => [f.kind, f.path]).sort();
    expect(findings).toEqual([
      ['altered-index', indexPathFor(c)],
      ['missing-file', a],
      ['missing-index', indexPathFor(b)],
    ]);
  });

  it('catches an extra file that no manifest names', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    const p = dataPaths(s)[0] as string;
    s.objects.set(
      p.replace(/\+0+-0+2\.avro$/, '+00000000000000000100-00000000000000000102.avro'),
      Buffer.from('x'),
    );
    s.objects.set('table=orders/notes.txt', Buffer.from('x'));
    // A key index under _index/ whose data file no manifest names is extra too.
    s.objects.set(
      indexPathFor(p.replace(/\+0+-0+2\.avro$/, '+00000000000000000200-00000000000000000202.avro')),
      Buffer.from('{}'),
    );
    expect(await findingKinds(s)).toEqual(['extra-file', 'extra-file', 'extra-file']);
  });

  it('catches a removed roll (manifest and files) in the middle or at the start, and an altered manifest', async () => {
    const built = new MemoryStorage();
    await archiveRange(built, 0, 11);
    const [m0, m1, m2] = manifestPaths(built) as [string, string, string];
    const copy = (): MemoryStorage => {
      const c = new MemoryStorage();
      for (const [k, v] of built.objects) c.objects.set(k, v);
      return c;
    };
    const removeRoll = (s: MemoryStorage, path: string): void => {
      for (const f of (s.json(path) as Manifest).files) {
        s.objects.delete(f);
        s.objects.delete(indexPathFor(f));
      }
      s.objects.delete(path);
    };

    const middle = copy();
    removeRoll(middle, m1);
    expect(await findingKinds(middle)).toEqual(['broken-link', 'gap']);

    // Nothing says where a partition began, so no gap; the second roll's link names the missing first.
    const first = copy();
    removeRoll(first, m0);
    expect(await findingKinds(first)).toEqual(['broken-link']);

    const altered = copy();
    const m = altered.json(m1) as Manifest;
    altered.objects.set(m1, encodeArchiveJson({ ...m, records: m.records - 1 }));
    const findings = (await verifyArchive(altered)).findings;
    expect(findings.map((f) => [f.kind, f.path])).toEqual([['broken-link', m2]]);
  });

  it('catches a manifest whose digests were rewritten to match an altered file (its successor still holds the old digest)', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 8);
    const [, m1] = manifestPaths(s) as [string, string];
    const m = s.json(m1) as Manifest;
    const file = m.files[0] as string;
    s.objects.set(file, Buffer.from('forged'));
    const { createHash } = await import('node:crypto');
    const digests = (m.digests ?? []).map((d) =>
      d.path === file ? { ...d, sha256: createHash('sha256').update('forged').digest('hex'), bytes: 6 } : d,
    );
    s.objects.set(m1, encodeArchiveJson({ ...m, digests }));
    expect(await findingKinds(s)).toEqual(['broken-link']);
  });

  it('counts manifests written before sealing as legacy, and reads nothing but files in scope', async () => {
    const s = new MemoryStorage();
    await archiveRange(s, 0, 5);
    const [m0] = manifestPaths(s) as [string];
    const { prev: _prev, digests: _digests, ...legacy } = s.json(m0) as Manifest;
    s.objects.set(m0, encodeArchiveJson(legacy));
    const report = await verifyArchive(s);
    expect(report.legacy).toBe(1);
    // The second roll linked to the sealed bytes of the first: rewriting it is visible.
    expect(report.findings.map((f) => f.kind)).toEqual(['broken-link']);
    const scoped = await verifyArchive(s, { table: 'orders' });
    const sealedOrders = manifestPaths(s)
      .flatMap((p) => (s.json(p) as Manifest).digests ?? [])
      .filter((d) => d.path.startsWith('table=orders/'));
    expect(sealedOrders.length).toBeGreaterThan(0);
    expect(scoped.files).toBe(sealedOrders.length);
    expect(scoped.files).toBeLessThan(report.files);
    expect(manifestPrefix(T, 0)).toBe('_manifest/topic/0/');
  });
});
