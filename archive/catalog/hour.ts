import { ValidationError } from '../../core/errors';
import { CompactionRecordSchema } from '../ledgers/compaction-records';
import {
  compactListingPrefix,
  compactionRecordPath,
  generationPath,
  parseArchiveJson,
  parseCompactPath,
  type CompactedName,
} from '../storage/layout';
import type { ArchiveStorage } from '../storage/types';

/**
 * Which files of one hour folder readers see (docs/decisions/0037). Without a compaction: each file's current
 * generation. A compaction n of the hour is switched once every one of its files has its key index (they are
 * written after the files are staged and read back, before anything is removed); from then on its files are the
 * hour's in place of those its record replaced, read from the staging area until they move into the folder. Files
 * of a compaction not yet switched are not the hour's yet. A roll's file the compaction did not replace (a late
 * roll) stays the hour's. The listing alone says this in the usual case (one switched compaction, nothing else):
 * only otherwise are the hour's compaction records listed and read.
 */

/** One data file of a table, found by listing (never by opening it). */
export interface CatalogFile {
  /** Data file path, relative to the archive root: the file's current generation. */
  path: string;
  /** The path of generation 0, as manifests name it. */
  base: string;
  /** 0 as the archiver wrote it; g after g rewrites by erasures. */
  generation: number;
  /**
   * Its key index (under `_index/`, or beside the data file in an archive written before docs/decisions/0033); null
   * while only the data file exists (a roll interrupted before its index).
   */
  indexPath: string | null;
  /** Start of the UTC deletion hour the file belongs to. */
  hourStartMs: number;
  /** A roll's partition and offsets; -1 and 0 for a compacted file, which holds every partition of its hour. */
  partition: number;
  first: bigint;
  last: bigint;
  /** Which compaction wrote it (docs/decisions/0037); null for a roll's file. */
  compaction: CompactedName | null;
  /** Data files and key indexes of its older generations still there (an erasure interrupted after its switch). */
  superseded: string[];
}

/** One data file (generation 0 name) as listed: the generations of it that have a data file and a key index. */
export interface Generations {
  file: CatalogFile;
  data: Set<number>;
  /** Per generation, where its index was listed (`_index/` wins over beside: it is where readers look first). */
  index: Map<number, string>;
}

export type HourFile = Generations['file'];

/**
 * The file readers see: the highest generation that has its key index (an erasure writes the index of a new
 * generation last, so its presence is the switch), else the newest data file alone.
 */
export function currentGeneration(g: Generations): HourFile | null {
  const complete = [...g.data].filter((n) => g.index.has(n));
  const pick = complete.length > 0 ? Math.max(...complete) : g.data.size > 0 ? Math.max(...g.data) : null;
  if (pick === null) return null;
  const path = generationPath(g.file.base, pick);
  const superseded = [
    ...[...g.data].filter((n) => n < pick).map((n) => generationPath(g.file.base, n)),
    ...[...g.index].filter(([n]) => n < pick).map(([, p]) => p),
  ];
  return { ...g.file, path, generation: pick, indexPath: g.index.get(pick) ?? null, superseded };
}

/** The compactions of an hour whose every file has its key index. */
function switchedCompactions(groups: readonly Generations[]): Set<number> {
  const indexed = new Map<number, { files: number; have: Set<number> }>();
  for (const g of groups) {
    const c = g.file.compaction;
    if (!c) continue;
    const entry = indexed.get(c.number) ?? { files: c.files, have: new Set<number>() };
    if (g.index.size > 0) entry.have.add(c.file);
    indexed.set(c.number, entry);
  }
  return new Set([...indexed].filter(([, e]) => e.have.size === e.files).map(([n]) => n));
}

/** The files of one hour folder readers see, in path order. */
export async function filesOfHour(
  storage: ArchiveStorage,
  hour: string,
  groups: readonly Generations[],
): Promise<HourFile[]> {
  const rolls = groups.filter((g) => g.file.compaction === null);
  const switched = switchedCompactions(groups);
  const compacted = groups.filter((g) => g.file.compaction && switched.has(g.file.compaction.number));
  if (switched.size === 0) return currentFiles(rolls);
  const inPlace = compacted.every((g) => currentGeneration(g)?.indexPath != null);
  if (rolls.length === 0 && switched.size === 1 && inPlace) return currentFiles(compacted);
  return resolveWithRecords(storage, hour, rolls, compacted, switched);
}

function currentFiles(groups: readonly Generations[]): HourFile[] {
  return groups.map(currentGeneration).filter((f): f is HourFile => f !== null);
}

/** The hour's files from its records: what the switched compactions replaced goes; their files come from staging until moved. */
async function resolveWithRecords(
  storage: ArchiveStorage,
  hour: string,
  rolls: readonly Generations[],
  compacted: readonly Generations[],
  switched: ReadonlySet<number>,
): Promise<HourFile[]> {
  const staged = new Map<string, string>();
  for await (const p of storage.list(compactListingPrefix(hour))) {
    const parsed = parseCompactPath(p);
    if (parsed?.staged) staged.set(parsed.staged, p);
  }
  const replaced = new Set<string>();
  for (const n of switched) {
    const path = compactionRecordPath(hour, n);
    const body = await storage.get(path);
    if (body === null)
      throw new ValidationError(
        `${path}: the files of compaction ${n} of ${hour} are there, its record is not`,
      );
    for (const r of parseArchiveJson(CompactionRecordSchema, body, path).replaced) replaced.add(r.base);
  }
  const out: HourFile[] = [];
  for (const g of [...rolls, ...compacted]) {
    if (replaced.has(g.file.base)) continue;
    const current = currentGeneration(g);
    if (current?.indexPath != null) out.push(current);
    else if (g.file.compaction && g.index.has(0) && staged.has(g.file.base))
      // Switched, not yet moved into the folder: read where it was staged.
      out.push({ ...g.file, path: staged.get(g.file.base) as string, indexPath: g.index.get(0) as string });
    else if (current && !g.file.compaction) out.push(current);
  }
  return out.sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
}
