import { generationPath, indexPathsOf, type KeyIndex } from '../../archive/storage/layout';
import { digestOfIndexKey } from '../../archive/ledgers/erasure';
import type { EraseRecord, Generation } from '../../archive/ledgers/erasure-records';

/**
 * Pure: what erasing a set of keys does to one data file, decided from its key index alone.
 * The rows the index numbers are the data file's rows, in order; a rewrite keeps the others in
 * their order and numbers them again.
 */

export interface FileRewritePlan {
  /** Row numbers (in the current generation) to keep, ascending. */
  keep: number[];
  removed: number;
  /** Per erased key found in this file (its digest), the rows removed. */
  erased: Record<string, number>;
  /** The key index of the new generation (its rows renumbered). */
  index: KeyIndex;
}

/** Null when no row of the file belongs to an erased key. */
export function planFileRewrite(
  index: KeyIndex,
  erasedDigests: ReadonlySet<string>,
  newPath: string,
): FileRewritePlan | null {
  const keep: number[] = [];
  const hit: Record<string, number> = {};
  const rows: KeyIndex['rows'] = [];
  for (const row of index.rows) {
    const digest = digestOfIndexKey(index.table, row.key);
    if (erasedDigests.has(digest)) {
      hit[digest] = (hit[digest] ?? 0) + 1;
      continue;
    }
    keep.push(row.row);
    rows.push({ ...row, row: rows.length });
  }
  if (keep.length === index.rows.length) return null;
  return {
    keep,
    removed: index.rows.length - keep.length,
    erased: hit,
    index: { ...index, file: newPath, rows },
  };
}

/**
 * The generation a rewrite of the file now read as generation `current` writes: current + 1. A
 * record may already name that generation (an earlier run crashed before its index, the switch):
 * it is replaced, since its files never became the file's current state.
 */
export function nextGeneration(current: number): number {
  return current + 1;
}

/** The record with `generation` appended, dropping any entry at or after it (an unfinished attempt). */
export function withGeneration(
  record: EraseRecord | null,
  base: string,
  manifest: EraseRecord['manifest'],
  generation: Generation,
): EraseRecord {
  const earlier = (record?.generations ?? []).filter((g) => g.generation < generation.generation);
  return { file: base, manifest: record?.manifest ?? manifest, generations: [...earlier, generation] };
}

/**
 * Every path (data and index) of the generations before `generation`: removed once it is in place. An index may be
 * under `_index/` or, written before docs/decisions/0033, beside its data file: both are named.
 */
export function supersededPaths(base: string, generation: number): { index: string[]; data: string[] } {
  const data = Array.from({ length: generation }, (_, g) => generationPath(base, g));
  return { index: data.flatMap((p) => indexPathsOf(p)), data };
}
