import { sha256Hex } from '../../archive/chain/seal';
import {
  bucketOfDigest,
  filesOfDigest,
  newestDayIndex,
  parseDayIndexBucket,
  type DayIndexBucket,
} from '../../archive/catalog/day-index';
import { CompactionRecordSchema, type CompactionRecord } from '../../archive/ledgers/compaction-records';
import { digestOfIndexKey } from '../../archive/ledgers/erasure';
import { EraseRecordSchema, eraseRecordPath, type EraseRecord } from '../../archive/ledgers/erasure-records';
import { fileDueForPurge, retentionCutoffMs } from '../../archive/retention/policy';
import { listWithIndexes, readKeyIndex } from '../../archive/storage/key-index';
import {
  COMPACT_DIR,
  ERASE_DIR,
  INDEX_DIR,
  KeyIndexSchema,
  LOSS_DIR,
  compactionRecordPath,
  stagedPathFor,
  parseCompactPath,
  parseDayIndexPath,
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
} from '../../archive/storage/layout';
import { listManifests } from '../../archive/storage/manifests';
import type { ArchiveStorage } from '../../archive/storage/types';
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
  /** Sealed files replaced by a compaction (docs/decisions/0037), followed to the files it sealed instead. */
  compacted: number;
  /**
   * Compactions not finished: a record not yet whole or switched to (the files it replaces are checked), or
   * replaced files, staged files still there.
   */
  compactInProgress: string[];
  /** Day key indexes checked against the key indexes of the files they cover (docs/decisions/0038). */
  dayIndexes: number;
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

/** The archive as the listing of its data area saw it: a data file or key index it did not list reads as absent. */
class ListedOnly implements ArchiveStorage {
  readonly kind: ArchiveStorage['kind'];
  readonly root: string;

  constructor(
    private readonly inner: ArchiveStorage,
    private readonly listed: ReadonlySet<string>,
  ) {
    this.kind = inner.kind;
    this.root = inner.root;
  }

  get(path: string): Promise<Buffer | null> {
    const inArea = path.startsWith('table=') || path.startsWith(`${INDEX_DIR}/table=`);
    return inArea && !this.listed.has(path) ? Promise.resolve(null) : this.inner.get(path);
  }

  list = (prefix: string): AsyncIterable<string> => this.inner.list(prefix);
  put = (path: string, body: Buffer): Promise<void> => this.inner.put(path, body);
  putIfAbsent = (path: string, body: Buffer): Promise<boolean> => this.inner.putIfAbsent(path, body);
  delete = (path: string): Promise<void> => this.inner.delete(path);
  move = (from: string, to: string): Promise<void> => this.inner.move(from, to);
}

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
  /** Per replaced file (generation 0 name), the switched compaction that replaced it. */
  replacedBy: Map<string, { record: CompactionRecord; path: string; switched: boolean }>;
  /** Every file a whole compaction record seals (in scope or not). */
  compactionSealed: Set<string>;
  /** Files of switched compactions still staged (not yet moved into their folder): read there. */
  stagedData: Map<string, string>;
  /** Compactions not finished (records, staged files), by path. */
  compactInProgress: Set<string>;
  /** The day key index buckets seen in the data area's listing. */
  dayIndexPaths: string[];
  /** Every path of the data area's listing (in scope): a sealed file not in it is absent, without a read. */
  present: Set<string>;
  indexesBeside: number;
}

/** What reading the sealed files counts. */
interface Tally {
  done: number;
  rows: number;
  bytes: number;
  purged: number;
  erased: number;
  compacted: number;
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

/**
 * The compaction records (docs/decisions/0037): the files a whole one seals join the sealed files, and what a
 * switched one replaced is followed to it. A record not yet whole, or whose files are still being switched to, is
 * a compaction in progress: the files it replaces are checked as they are.
 */
async function readCompactions(storage: ArchiveStorage, options: VerifyOptions, s: Survey): Promise<void> {
  const staged = new Set<string>();
  const records: Array<{ path: string; record: CompactionRecord }> = [];
  for await (const path of storage.list(`${COMPACT_DIR}/`)) {
    const parsed = parseCompactPath(path);
    if (!parsed) {
      s.findings.push({ kind: 'bad-compaction', path, detail: 'not a compaction record or a staged file' });
      continue;
    }
    if (parsed.staged) {
      staged.add(path);
      continue;
    }
    const body = await storage.get(path);
    if (!body) continue;
    try {
      const record = parseArchiveJson(CompactionRecordSchema, body, path);
      if (compactionRecordPath(record.hour, record.number) !== path)
        s.findings.push({ kind: 'bad-compaction', path, detail: `names another hour (${record.hour})` });
      else records.push({ path, record });
    } catch (err) {
      s.findings.push({ kind: 'bad-compaction', path, detail: (err as Error).message });
    }
  }
  for (const { path, record } of records) {
    const left = (suffix: string): boolean =>
      record.files.some((f) => staged.has(`${stagedPathFor(f.path)}${suffix}`));
    if (record.files.length !== record.outputs) {
      s.compactInProgress.add(path);
      continue;
    }
    // Whole: its files are the archive's (some of their indexes may be in place already) ...
    for (const f of record.files) s.listed.add(f.path);
    // ... but until every index is, readers keep to the files it replaces.
    if (left('.idx.json')) {
      s.compactInProgress.add(path);
      continue;
    }
    if (left('')) s.compactInProgress.add(path);
    for (const f of record.files)
      if (staged.has(stagedPathFor(f.path))) s.stagedData.set(f.path, stagedPathFor(f.path));
    const finding = compactionRowsFinding(record);
    if (finding) s.findings.push({ kind: 'bad-compaction', path, detail: finding });
    for (const f of record.files) {
      s.compactionSealed.add(f.path);
      if (inScope(f.path, options)) s.sealed.push({ digest: f, manifest: path });
    }
    for (const r of record.replaced) s.replacedBy.set(r.base, { record, path, switched: true });
  }
}

/** A whole record's rows must add up: those it replaced, less those of erased keys it left out, are those it wrote. */
function compactionRowsFinding(record: CompactionRecord): string | null {
  const rowsIn = record.replaced.reduce((n, r) => n + r.sealed.rows, 0);
  const erased = Object.values(record.erased).reduce((n, x) => n + x, 0);
  const rowsOut = record.files.reduce((n, f) => n + f.rows, 0);
  if (record.rows.in !== rowsIn || record.rows.out !== rowsOut || rowsIn - erased !== rowsOut)
    return `its rows do not add up: ${rowsIn} replaced, ${erased} erased, ${rowsOut} written (record says ${record.rows.in} and ${record.rows.out})`;
  return null;
}

/** A purge or erase record must be of a file a complete manifest seals. */
function checkRecordsSealed(s: Survey): void {
  const { findings, chains, purges, erasures } = s;
  const sealedPaths = new Set<string>(s.compactionSealed);
  for (const entries of chains.values())
    for (const e of entries) for (const f of e.manifest.files) sealedPaths.add(f);
  for (const file of purges.keys())
    if (!sealedPaths.has(file))
      findings.push({
        kind: 'bad-purge',
        path: file,
        detail: 'purge record of a file no complete manifest or compaction seals',
      });
  for (const [file, { path }] of erasures)
    if (!sealedPaths.has(file))
      findings.push({
        kind: 'bad-erase',
        path,
        detail: 'erase record of a file no complete manifest or compaction seals',
      });
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
    s.present.add(path);
    if (parseDayIndexPath(path)) {
      s.dayIndexPaths.push(path);
      continue;
    }
    if (!inScope(data, options)) {
      if (!parseDataFilePath(data) && options.table === undefined && options.fromMs === undefined)
        s.findings.push({ kind: 'extra-file', path, detail: 'not an archive file name' });
      continue;
    }
    if (!s.listed.has(data)) s.findings.push({ kind: 'extra-file', path, detail: 'named by no manifest' });
    else if (beside) s.indexesBeside += 1;
  }
}

/** What was observed of a sealed file: its data, its index, and each recorded erasure generation's. */
interface Seen {
  data: Observed;
  index: ObservedIndex;
  generations: Array<{ g: EraseRecord['generations'][number]; data: Observed; index: ObservedIndex }>;
}

/** One sealed file: present and as sealed, or purged, compacted or erased as its records say. */
async function checkSealedFile(
  storage: ArchiveStorage,
  s: Survey,
  t: Tally,
  d: FileDigest,
  manifest: string,
): Promise<void> {
  const [inPlace, index] = await Promise.all([observe(storage, d.path), observeIndex(storage, d.path)]);
  // A compacted file switched to but not yet moved into its folder is checked where it waits.
  const staged = inPlace === null ? s.stagedData.get(d.path) : undefined;
  const data = staged ? await observe(storage, staged) : inPlace;
  const erasure = s.erasures.get(d.path);
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
  const seen: Seen = { data, index, generations };
  const purge = s.purges.get(d.path);
  const compaction = s.replacedBy.get(d.path);
  if (purge) checkPurged(s, t, d, manifest, purge, seen);
  else if (compaction) checkReplaced(s, t, d, manifest, compaction, seen);
  else if (erasure) checkErased(s, t, d, manifest, erasure, seen);
  else {
    s.findings.push(...checkFile(d, data, index));
    t.rows += d.rows;
    t.bytes += data?.bytes ?? 0;
  }
}

/** A sealed file with a purge record: gone, by a record that names this very seal and was due. */
function checkPurged(
  s: Survey,
  t: Tally,
  d: FileDigest,
  manifest: string,
  purge: PurgeRecord,
  seen: Seen,
): void {
  const { findings } = s;
  if (seen.generations.some((x) => x.data !== null || x.index !== null)) {
    t.purgeInProgress.push(d.path);
    return;
  }
  // The record must name this very seal: a record made up for another file (or a forged manifest) does not excuse
  // an absence.
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
  else if (seen.data === null && seen.index === null) t.purged += 1;
  else t.purgeInProgress.push(d.path);
}

/**
 * A sealed file a switched compaction replaced: the record must name the seal of the generation it read (the
 * manifest's, or its erasure's), and every generation of it is gone once the compaction is finished. Its rows are
 * counted with the compacted files.
 */
function checkReplaced(
  s: Survey,
  t: Tally,
  d: FileDigest,
  manifest: string,
  compaction: { record: CompactionRecord; path: string },
  seen: Seen,
): void {
  const entry = compaction.record.replaced.find((r) => r.base === d.path);
  const erasure = s.erasures.get(d.path);
  if (erasure)
    s.findings.push(
      ...checkGenerations(d, manifest, erasure.record, erasure.path, (g) => generationPath(d.path, g)),
    );
  const expected =
    entry?.generation === 0
      ? d
      : erasure?.record.generations.find((g) => g.generation === entry?.generation)?.sealed;
  if (
    !entry ||
    !expected ||
    expected.sha256 !== entry.sealed.sha256 ||
    expected.index.sha256 !== entry.sealed.index.sha256
  ) {
    s.findings.push({
      kind: 'bad-compaction',
      path: compaction.path,
      detail: `replaces ${d.path} with a seal ${manifest} and its erasures do not give`,
    });
    return;
  }
  t.compacted += 1;
  const present = (x: { data: Observed; index: ObservedIndex }): boolean =>
    x.data !== null || x.index !== null;
  if (present(seen) || seen.generations.some(present)) s.compactInProgress.add(compaction.path);
}

/** A sealed file rewritten by erasures: its generations' links, and the newest switched one as sealed. */
function checkErased(
  s: Survey,
  t: Tally,
  d: FileDigest,
  manifest: string,
  erasure: { record: EraseRecord; path: string },
  seen: Seen,
): void {
  const { data, index, generations } = seen;
  t.erased += 1;
  s.findings.push(
    ...checkGenerations(d, manifest, erasure.record, erasure.path, (g) => generationPath(d.path, g)),
  );
  // The newest generation whose index is in place is the file; one recorded after it but without its index is an
  // erasure interrupted before its switch.
  const current = [...generations].reverse().find((x) => x.index !== null) ?? null;
  const currentSeal = current ? current.g.sealed : d;
  const currentData = current ? current.data : data;
  s.findings.push(...checkFile(currentSeal, currentData, current ? current.index : index));
  t.rows += currentSeal.rows;
  t.bytes += currentData?.bytes ?? 0;
  const newest = generations.at(-1);
  const currentNumber = current ? current.g.generation : 0;
  const olderPresent =
    (currentNumber > 0 && (data !== null || index !== null)) ||
    generations.some((x) => x.g.generation < currentNumber && (x.data !== null || x.index !== null));
  if (newest && newest.g.generation !== currentNumber) t.eraseInProgress.push(d.path);
  else if (olderPresent) t.eraseInProgress.push(d.path);
}

/**
 * Each day key index in scope (its newest whole version) against the files it covers that are still there: every
 * key of such a file's key index must be in it, under that file (one left out would hide the file from `archive
 * erase`). A covered file since purged or compacted again is no longer read through it.
 */
async function checkDayIndexes(storage: ArchiveStorage, options: VerifyOptions, s: Survey): Promise<number> {
  const byDay = new Map<string, string[]>();
  for (const p of s.dayIndexPaths) {
    const parsed = parseDayIndexPath(p);
    if (!parsed) continue;
    const day = Date.parse(`${parsed.date}T00:00:00Z`);
    if (options.fromMs !== undefined && day + 86_400_000 <= options.fromMs) continue;
    if (options.toMs !== undefined && day >= options.toMs) continue;
    const k = `${parsed.tableSegment}/${parsed.date}`;
    byDay.set(k, [...(byDay.get(k) ?? []), p]);
  }
  let checked = 0;
  for (const paths of byDay.values()) {
    const version = newestDayIndex(paths);
    if (!version) continue;
    const buckets = [];
    for (const p of version.paths) {
      const body = await storage.get(p);
      if (!body) continue;
      try {
        buckets.push(parseDayIndexBucket(body, p));
      } catch (err) {
        s.findings.push({ kind: 'bad-key-index', path: p, detail: (err as Error).message });
      }
    }
    if (buckets.length !== version.paths.length) continue;
    checked += 1;
    const finding = await dayIndexFinding(storage, s, buckets);
    if (finding)
      s.findings.push({ kind: 'bad-key-index', path: version.paths[0] as string, detail: finding });
  }
  return checked;
}

/** What a day index misses of the files it covers (their current generation's key index), or null. */
async function dayIndexFinding(
  storage: ArchiveStorage,
  s: Survey,
  buckets: DayIndexBucket[],
): Promise<string | null> {
  const { files, table, bits } = (buckets[0] as DayIndexBucket).header;
  for (const [n, base] of files.entries()) {
    const erasure = s.erasures.get(base);
    const generations = [...(erasure?.record.generations.map((g) => g.generation) ?? []), 0].sort(
      (a, b) => b - a,
    );
    let found = null;
    for (const g of generations) {
      found = await readKeyIndex(storage, generationPath(base, g));
      if (found) break;
    }
    if (!found) continue;
    let index;
    try {
      index = parseArchiveJson(KeyIndexSchema, found.body, found.path);
    } catch {
      continue; // an index that does not parse is a finding of its own (altered-index)
    }
    for (const row of index.rows) {
      const digest = digestOfIndexKey(table, row.key);
      const bucket = buckets[bucketOfDigest(digest, bits)];
      if (!bucket || !filesOfDigest(bucket, digest).includes(n))
        return `misses a key of ${base} (row ${row.row}): archive erase would not find that file`;
    }
  }
  return null;
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
    compacted: 0,
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
    replacedBy: new Map(),
    stagedData: new Map(),
    compactionSealed: new Set(),
    compactInProgress: new Set(),
    dayIndexPaths: [],
    present: new Set(),
    indexesBeside: 0,
  };
  await readManifests(storage, options, s);
  await readRecords(storage, s);
  await readCompactions(storage, options, s);
  checkRecordsSealed(s);
  const { legacy, heads } = checkChains(s);
  await findExtraFiles(storage, options, s);
  // The data area was listed (after the manifests were read, so every file they seal was there, unless removed
  // since): a sealed file the listing did not have is absent without a read (a compacted hour's rolls).
  const t = await checkSealedFiles(new ListedOnly(storage, s.present), options, s);
  const dayIndexes = await checkDayIndexes(storage, options, s);

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
    compacted: t.compacted,
    compactInProgress: [...s.compactInProgress].sort(),
    dayIndexes,
    files: s.sealed.length,
    rows: t.rows,
    bytes: t.bytes,
    indexesBeside: s.indexesBeside,
    heads,
  };
}
