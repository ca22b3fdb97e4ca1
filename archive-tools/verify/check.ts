import { indexPathFor, type ChainLink, type FileDigest, type Manifest } from '../../archive/storage/layout';

/**
 * Pure: the checks of `archive verify` (docs/decisions/0010), given what was read from storage.
 * A finding is evidence that the archive differs from what the archiver sealed.
 */

export type FindingKind =
  | 'missing-file'
  | 'altered-file'
  | 'truncated-file'
  | 'missing-index'
  | 'altered-index'
  | 'extra-file'
  | 'broken-link'
  | 'gap'
  | 'overlap'
  | 'bad-manifest'
  | 'bad-purge'
  | 'bad-erase'
  | 'bad-compaction'
  | 'bad-key-index';

export interface Finding {
  kind: FindingKind;
  /** The object the finding is about (a data file, key index or manifest path). */
  path: string;
  detail: string;
}

/** A complete manifest as found: its parsed content and the SHA-256 of its bytes. */
export interface ChainEntry {
  path: string;
  first: bigint;
  last: bigint;
  sha256: string;
  manifest: Manifest;
}

export interface OffsetRange {
  from: bigint;
  to: bigint;
}

export interface ChainResult {
  findings: Finding[];
  /** The newest link: record it outside the archive to make removing the newest rolls evident too. */
  head: ChainLink | null;
  /** Manifests written before the chain existed (no `prev`, no digests): their files cannot be proved. */
  legacy: number;
}

/** True when `losses` account for every offset of [from..to]. */
export function coveredByLoss(from: bigint, to: bigint, losses: OffsetRange[]): boolean {
  let next = from;
  for (const l of [...losses].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0))) {
    if (l.from > next) break;
    if (l.to >= next) next = l.to + 1n;
    if (next > to) return true;
  }
  return next > to;
}

/**
 * One partition's complete manifests: in offset order, each must name its predecessor (path and
 * digest of its bytes), and consecutive ranges must touch unless a loss record explains the gap.
 * A removed or altered manifest breaks its successor's link; a removed middle roll also leaves a gap.
 */
export function checkChain(entries: ChainEntry[], losses: OffsetRange[]): ChainResult {
  const sorted = [...entries].sort((a, b) =>
    a.first < b.first ? -1 : a.first > b.first ? 1 : a.last < b.last ? -1 : a.last > b.last ? 1 : 0,
  );
  const findings: Finding[] = [];
  let legacy = 0;
  let before: ChainEntry | null = null;
  for (const e of sorted) {
    if (before && e.first <= before.last)
      findings.push({
        kind: 'overlap',
        path: e.path,
        detail: `offsets ${e.first}-${e.last} overlap ${before.path} (${before.first}-${before.last})`,
      });
    else if (before && e.first > before.last + 1n && !coveredByLoss(before.last + 1n, e.first - 1n, losses))
      findings.push({
        kind: 'gap',
        path: e.path,
        detail: `offsets ${before.last + 1n}-${e.first - 1n} are in no manifest and no loss record`,
      });
    const prev = e.manifest.prev;
    if (prev === undefined) legacy += 1;
    else if (prev === null) {
      if (before)
        findings.push({
          kind: 'broken-link',
          path: e.path,
          detail: `says it is the partition's first roll, but ${before.path} comes before it`,
        });
    } else if (!before)
      findings.push({
        kind: 'broken-link',
        path: e.path,
        detail: `names predecessor ${prev.path}, which is not in the archive`,
      });
    else if (prev.path !== before.path)
      findings.push({
        kind: 'broken-link',
        path: e.path,
        detail: `names predecessor ${prev.path}, but the roll before it is ${before.path}`,
      });
    else if (prev.sha256 !== before.sha256)
      findings.push({
        kind: 'broken-link',
        path: e.path,
        detail: `its predecessor ${before.path} was altered (SHA-256 ${before.sha256}, sealed as ${prev.sha256})`,
      });
    before = e;
  }
  return { findings, head: before ? { path: before.path, sha256: before.sha256 } : null, legacy };
}

/** What was found at a path: the SHA-256 and size of its bytes, or null when it is absent. */
export type Observed = { sha256: string; bytes: number } | null;
/** A key index as observed, with the place it was found (`_index/`, or beside its data file). */
export type ObservedIndex = { sha256: string; bytes: number; path: string } | null;

/** One sealed data file and its key index against what storage holds now. */
export function checkFile(sealed: FileDigest, data: Observed, index: ObservedIndex): Finding[] {
  const out: Finding[] = [];
  if (data === null)
    out.push({ kind: 'missing-file', path: sealed.path, detail: `sealed with ${sealed.rows} row(s)` });
  else if (data.sha256 !== sealed.sha256)
    out.push(
      data.bytes < sealed.bytes
        ? {
            kind: 'truncated-file',
            path: sealed.path,
            detail: `${data.bytes} of ${sealed.bytes} bytes, SHA-256 differs`,
          }
        : {
            kind: 'altered-file',
            path: sealed.path,
            detail: `SHA-256 ${data.sha256}, sealed ${sealed.sha256}`,
          },
    );
  if (index === null)
    out.push({
      kind: 'missing-index',
      path: indexPathFor(sealed.path),
      detail: 'key index absent (neither under _index/ nor beside the data file)',
    });
  else if (index.sha256 !== sealed.index.sha256)
    out.push({
      kind: 'altered-index',
      path: index.path,
      detail: `SHA-256 ${index.sha256}, sealed ${sealed.index.sha256}`,
    });
  return out;
}

/** The links of a file's erasure generations (docs/decisions/0013), as far as their record goes. */
export function checkGenerations(
  sealed: FileDigest,
  manifest: string,
  record: {
    file: string;
    manifest: ChainLink;
    generations: Array<{ generation: number; prev: string; sealed: FileDigest }>;
  },
  recordPath: string,
  pathOf: (generation: number) => string,
): Finding[] {
  const bad = (detail: string): Finding[] => [{ kind: 'bad-erase', path: recordPath, detail }];
  if (record.file !== sealed.path) return bad(`names another file (${record.file})`);
  if (record.manifest.path !== manifest)
    return bad(`names ${record.manifest.path}, but ${manifest} seals the file`);
  let before: FileDigest = sealed;
  let n = 0;
  for (const g of record.generations) {
    if (g.generation <= n) return bad(`generation ${g.generation} after ${n}`);
    if (g.sealed.path !== pathOf(g.generation))
      return bad(`generation ${g.generation} sealed as ${g.sealed.path}`);
    if (g.prev !== before.sha256)
      return bad(
        `generation ${g.generation} follows SHA-256 ${g.prev}, but generation ${n} was sealed as ${before.sha256}`,
      );
    before = g.sealed;
    n = g.generation;
  }
  return [];
}
