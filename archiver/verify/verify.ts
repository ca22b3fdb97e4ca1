import { sha256Hex } from '../chain/seal';
import { EraseRecordSchema, eraseRecordPath, type EraseRecord } from '../erase/records';
import { fileDueForPurge, retentionCutoffMs } from '../retention/policy';
import { listWithIndexes, readKeyIndex } from '../storage/key-index';
import {
  ERASE_DIR,
  LOSS_DIR,
  generationPath,
  LossRecordSchema,
  PURGE_DIR,
  PurgeRecordSchema,
  parseArchiveJson,
  parseDataFilePath,
  parseManifestPath,
  purgePath,
  tablePrefix,
  type ChainLink,
  type FileDigest,
  type PurgeRecord,
} from '../storage/layout';
import { listManifests } from '../storage/manifests';
import type { ArchiveStorage } from '../storage/types';
import {
  checkChain,
  checkFile,
  checkGenerations,
  type ChainEntry,
  type Finding,
  type Observed,
  type ObservedIndex,
  type OffsetRange,
} from './check';

/**
 * `archive verify`: reads every manifest, loss record and (in scope) data file and key index,
 * and checks them against what the archiver sealed (check.ts). Reads only; never writes.
 */

export interface VerifyOptions {
  /** Only this table's files are read (the chains of every partition are checked all the same: they are small). */
  table?: string;
  /** Only files of deletion hours overlapping [fromMs, toMs). */
  fromMs?: number;
  toMs?: number;
  /** Called after each data file checked. */
  onProgress?: (done: number, total: number) => void;
  /** Files read at once (S3 reads are mostly waiting). */
  concurrency?: number;
}

export interface VerifyReport {
  findings: Finding[];
  partitions: number;
  manifests: number;
  /** Rolls left `writing` (in progress, or a crash the next owner will redo): not failures. */
  inProgress: string[];
  /** Manifests written before sealing existed: counted, their files not provable. */
  legacy: number;
  /** Sealed files removed by the archive's retention, each with its purge record: not failures. */
  purged: number;
  /** Files whose purge record is written but that are not (wholly) removed yet: a purge running or interrupted. */
  purgeInProgress: string[];
  /** Sealed files rewritten by an erasure, checked against their newest generation's seal. */
  erased: number;
  /**
   * Files whose erasure is not finished: a generation recorded but not yet switched to (its index
   * absent; the previous generation is checked instead), or superseded generations still present.
   */
  eraseInProgress: string[];
  files: number;
  rows: number;
  bytes: number;
  /**
   * Key indexes (in scope) still beside their data files, as archives before docs/decisions/0033 wrote them: read
   * all the same, but Athena and Trino read them as data; `archive move-indexes` moves them to `_index/`.
   */
  indexesBeside: number;
  /** Per partition (`<topic segment>/<partition>`), the newest link: keep it elsewhere to anchor the chain. */
  heads: Record<string, ChainLink | null>;
}

/**
 * A purge record must be one the rule could have made: its cutoff is its time minus its retention,
 * and the file's whole hour ended before it. (Whether that retention was the table's at the time
 * is for a reader of the record: it names the days and the actor.)
 */
function purgeWasDue(record: PurgeRecord): boolean {
  return (
    record.cutoffMs === retentionCutoffMs(record.purgedAtMs, record.retentionDays) &&
    fileDueForPurge(record.file, record.cutoffMs)
  );
}

const PARTITION_OF = /^(?:_manifest|_loss)\/([^/]+)\/(\d+)\//;

async function observe(storage: ArchiveStorage, path: string): Promise<Observed> {
  const body = await storage.get(path);
  return body ? { sha256: sha256Hex(body), bytes: body.length } : null;
}

/** A data file's key index where readers find it (`_index/`, else beside the data file). */
async function observeIndex(storage: ArchiveStorage, dataPath: string): Promise<ObservedIndex> {
  const found = await readKeyIndex(storage, dataPath);
  return found ? { sha256: sha256Hex(found.body), bytes: found.body.length, path: found.path } : null;
}

function inScope(path: string, options: VerifyOptions): boolean {
  if (options.table !== undefined && !path.startsWith(tablePrefix(options.table))) return false;
  const parsed = parseDataFilePath(path);
  if (!parsed) return false;
  const hour = Date.parse(`${parsed.date}T${parsed.hour}:00:00Z`);
  if (options.fromMs !== undefined && hour + 3_600_000 <= options.fromMs) return false;
  if (options.toMs !== undefined && hour >= options.toMs) return false;
  return true;
}

/** What the passes over the archive's records gather, before the sealed files are read. */
interface Survey {
  findings: Finding[];
  chains: Map<string, ChainEntry[]>;
  losses: Map<string, OffsetRange[]>;
  inProgress: string[];
  /** Every file a manifest names (complete or writing): anything else in the data area is extra. */
  listed: Set<string>;
  sealed: Array<{ digest: FileDigest; manifest: string }>;
  manifests: number;
  purges: Map<string, PurgeRecord>;
  erasures: Map<string, { record: EraseRecord; path: string }>;
  indexesBeside: number;
}

/** What reading the sealed files counts. */
interface Tally {
  done: number;
  rows: number;
  bytes: number;
  purged: number;
  erased: number;
  purgeInProgress: string[];
  eraseInProgress: string[];
}

/** The manifests: each complete one joins its partition's chain, and its in-scope seals are read later. */
async function readManifests(storage: ArchiveStorage, options: VerifyOptions, s: Survey): Promise<void> {
  const { findings, chains, inProgress, listed, sealed } = s;
  for await (const entry of listManifests(storage)) {
    const { path, body } = entry;
    const where = PARTITION_OF.exec(path);
    const range = parseManifestPath(path);
    if (!where || !range || !body) {
      findings.push({ kind: 'bad-manifest', path, detail: 'not a manifest path, or vanished while listed' });
      continue;
    }
    s.manifests += 1;
    if (!('manifest' in entry)) {
      findings.push({ kind: 'bad-manifest', path, detail: entry.unreadable });
      continue;
    }
    const { manifest } = entry;
    if (BigInt(manifest.first) !== range.first || BigInt(manifest.last) !== range.last) {
      findings.push({ kind: 'bad-manifest', path, detail: 'its offsets disagree with its name' });
      continue;
    }
    for (const f of manifest.files) listed.add(f);
    if (manifest.state !== 'complete') {
      inProgress.push(path);
      continue;
    }
    const key = `${where[1]}/${where[2]}`;
    const list = chains.get(key) ?? [];
    list.push({ path, first: range.first, last: range.last, sha256: sha256Hex(body), manifest });
    chains.set(key, list);
    if (manifest.digests) {
      if (manifest.digests.map((d) => d.path).join('\n') !== manifest.files.join('\n'))
        findings.push({ kind: 'bad-manifest', path, detail: 'its digests do not name its files' });
      for (const d of manifest.digests)
        if (inScope(d.path, options)) sealed.push({ digest: d, manifest: path });
    }
  }
}

/** The loss records, purge records and erase records. */
async function readRecords(storage: ArchiveStorage, s: Survey): Promise<void> {
  const { findings, losses, listed, purges, erasures } = s;
  for await (const path of storage.list(`${LOSS_DIR}/`)) {
    const where = PARTITION_OF.exec(path);
    const body = await storage.get(path);
    if (!where || !body) continue;
    try {
      const loss = parseArchiveJson(LossRecordSchema, body, path);
      const key = `${where[1]}/${where[2]}`;
      losses.set(key, [...(losses.get(key) ?? []), { from: BigInt(loss.from), to: BigInt(loss.to) }]);
    } catch (err) {
      findings.push({ kind: 'bad-manifest', path, detail: (err as Error).message });
    }
  }

  for await (const path of storage.list(`${PURGE_DIR}/`)) {
    const body = await storage.get(path);
    if (!body) continue;
    try {
      const record = parseArchiveJson(PurgeRecordSchema, body, path);
      if (purgePath(record.file) !== path)
        findings.push({ kind: 'bad-purge', path, detail: `names another file (${record.file})` });
      else purges.set(record.file, record);
    } catch (err) {
      findings.push({ kind: 'bad-purge', path, detail: (err as Error).message });
    }
  }
  for await (const path of storage.list(`${ERASE_DIR}/`)) {
    const body = await storage.get(path);
    if (!body) continue;
    try {
      const record = parseArchiveJson(EraseRecordSchema, body, path);
      if (eraseRecordPath(record.file) !== path)
        findings.push({ kind: 'bad-erase', path, detail: `names another file (${record.file})` });
      else {
        erasures.set(record.file, { record, path });
        for (const g of record.generations) listed.add(g.sealed.path);
      }
    } catch (err) {
      findings.push({ kind: 'bad-erase', path, detail: (err as Error).message });
    }
  }
}

/** A purge or erase record must be of a file a complete manifest seals. */
function checkRecordsSealed(s: Survey): void {
  const { findings, chains, purges, erasures } = s;
  const sealedPaths = new Set<string>();
  for (const entries of chains.values())
    for (const e of entries) for (const f of e.manifest.files) sealedPaths.add(f);
  for (const file of purges.keys())
    if (!sealedPaths.has(file))
      findings.push({
        kind: 'bad-purge',
        path: file,
        detail: 'purge record of a file no complete manifest seals',
      });
  for (const [file, { path }] of erasures)
    if (!sealedPaths.has(file))
      findings.push({ kind: 'bad-erase', path, detail: 'erase record of a file no complete manifest seals' });
}

/** Each partition's chain of manifests; returns the legacy (unsealed) manifests and each chain's head. */
function checkChains(s: Survey): { legacy: number; heads: Record<string, ChainLink | null> } {
  let legacy = 0;
  const heads: Record<string, ChainLink | null> = {};
  for (const [key, entries] of [...s.chains].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const result = checkChain(entries, s.losses.get(key) ?? []);
    s.findings.push(...result.findings);
    legacy += result.legacy;
    heads[key] = result.head;
  }
  return { legacy, heads };
}

/**
 * Files in the data area (or key indexes under `_index/`) that no manifest names (in scope), or that are not archive
 * files at all; and the key indexes still beside their data files.
 */
async function findExtraFiles(storage: ArchiveStorage, options: VerifyOptions, s: Survey): Promise<void> {
  const prefix = options.table !== undefined ? tablePrefix(options.table) : 'table=';
  for await (const { path, dataPath: data, beside } of listWithIndexes(storage, prefix)) {
    if (!inScope(data, options)) {
      if (!parseDataFilePath(data) && options.table === undefined && options.fromMs === undefined)
        s.findings.push({ kind: 'extra-file', path, detail: 'not an archive file name' });
      continue;
    }
    if (!s.listed.has(data)) s.findings.push({ kind: 'extra-file', path, detail: 'named by no manifest' });
    else if (beside) s.indexesBeside += 1;
  }
}

/** One sealed file: present and as sealed, or purged or erased as its records say. */
async function checkSealedFile(
  storage: ArchiveStorage,
  s: Survey,
  t: Tally,
  d: FileDigest,
  manifest: string,
): Promise<void> {
  const { findings, purges, erasures } = s;
  const [data, index] = await Promise.all([observe(storage, d.path), observeIndex(storage, d.path)]);
  const purge = purges.get(d.path);
  const erasure = erasures.get(d.path);
  // Superseded or recorded generations of an erased file: absent once its erasure is done.
  const generations = erasure
    ? await Promise.all(
        erasure.record.generations.map(async (g) => ({
          g,
          data: await observe(storage, g.sealed.path),
          index: await observeIndex(storage, g.sealed.path),
        })),
      )
    : [];
  if (purge && generations.some((x) => x.data !== null || x.index !== null)) {
    t.purgeInProgress.push(d.path);
  } else if (purge) {
    // The record must name this very seal: a record made up for another file (or a forged
    // manifest) does not excuse an absence.
    if (purge.manifest.path !== manifest || (purge.sealed !== null && purge.sealed.sha256 !== d.sha256))
      findings.push({
        kind: 'bad-purge',
        path: purgePath(d.path),
        detail: `does not match the seal in ${manifest}`,
      });
    else if (!purgeWasDue(purge))
      findings.push({
        kind: 'bad-purge',
        path: purgePath(d.path),
        detail: `the file was not past a ${purge.retentionDays}-day retention at ${new Date(purge.purgedAtMs).toISOString()}`,
      });
    else if (data === null && index === null) t.purged += 1;
    else t.purgeInProgress.push(d.path);
  } else if (erasure) {
    t.erased += 1;
    const linkFindings = checkGenerations(d, manifest, erasure.record, erasure.path, (g) =>
      generationPath(d.path, g),
    );
    findings.push(...linkFindings);
    // The newest generation whose index is in place is the file; one recorded after it but
    // without its index is an erasure interrupted before its switch.
    const switched = [...generations].reverse().find((x) => x.index !== null);
    const current = switched ?? null;
    const currentSeal = current ? current.g.sealed : d;
    const currentData = current ? current.data : data;
    const currentIndex = current ? current.index : index;
    findings.push(...checkFile(currentSeal, currentData, currentIndex));
    t.rows += currentSeal.rows;
    t.bytes += currentData?.bytes ?? 0;
    const newest = generations.at(-1);
    const currentNumber = current ? current.g.generation : 0;
    const olderPresent =
      (currentNumber > 0 && (data !== null || index !== null)) ||
      generations.some((x) => x.g.generation < currentNumber && (x.data !== null || x.index !== null));
    if (newest && newest.g.generation !== currentNumber) t.eraseInProgress.push(d.path);
    else if (olderPresent) t.eraseInProgress.push(d.path);
  } else {
    findings.push(...checkFile(d, data, index));
    t.rows += d.rows;
    t.bytes += data?.bytes ?? 0;
  }
}

/** Reads every sealed file in scope, `options.concurrency` (8) at a time. */
async function checkSealedFiles(storage: ArchiveStorage, options: VerifyOptions, s: Survey): Promise<Tally> {
  const { sealed } = s;
  const t: Tally = {
    done: 0,
    rows: 0,
    bytes: 0,
    purged: 0,
    erased: 0,
    purgeInProgress: [],
    eraseInProgress: [],
  };
  let next = 0;
  const workers = Array.from({ length: Math.min(options.concurrency ?? 8, sealed.length) }, async () => {
    while (next < sealed.length) {
      const { digest: d, manifest } = sealed[next++] as { digest: FileDigest; manifest: string };
      await checkSealedFile(storage, s, t, d, manifest);
      options.onProgress?.(++t.done, sealed.length);
    }
  });
  await Promise.all(workers);
  return t;
}

export async function verifyArchive(
  storage: ArchiveStorage,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const s: Survey = {
    findings: [],
    chains: new Map(),
    losses: new Map(),
    inProgress: [],
    listed: new Set(),
    sealed: [],
    manifests: 0,
    purges: new Map(),
    erasures: new Map(),
    indexesBeside: 0,
  };
  await readManifests(storage, options, s);
  await readRecords(storage, s);
  checkRecordsSealed(s);
  const { legacy, heads } = checkChains(s);
  await findExtraFiles(storage, options, s);
  const t = await checkSealedFiles(storage, options, s);

  return {
    findings: s.findings,
    partitions: s.chains.size,
    manifests: s.manifests,
    inProgress: s.inProgress,
    legacy,
    purged: t.purged,
    purgeInProgress: t.purgeInProgress,
    erased: t.erased,
    eraseInProgress: t.eraseInProgress,
    files: s.sealed.length,
    rows: t.rows,
    bytes: t.bytes,
    indexesBeside: s.indexesBeside,
    heads,
  };
}
