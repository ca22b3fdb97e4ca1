import type { Logger } from '../core/logger';
import {
  KeyIndexSchema,
  ManifestSchema,
  indexPathFor,
  manifestPrefix,
  pad20,
  parseArchiveJson,
  parseManifestPath,
  type KeyIndexRow,
  type Manifest,
} from './storage/layout';
import { rowsMovedByCompaction, type MovedCache } from './ledgers/compaction-moves';
import { readKeyIndex } from './storage/key-index';
import { safeSegment } from './storage/safe-segment';
import type { ArchiveStorage } from './storage/types';
import type { ErrorCode } from '../core/error-codes';
import { TtlstreamError } from '../core/errors';

/**
 * What the archive knows about one partition: where the complete rolls end, which rolls were left
 * `writing` by a crash, and the eventIDs of the latest complete rolls (for de-duplication).
 *
 * Manifests are listed in blocks of BLOCK offsets (their names start with the 20-digit first
 * offset, so a block is one name prefix) around the committed offset, never the partition's
 * whole history: a year of one-minute rolls would otherwise be half a million names to list at
 * every rebalance.
 */
export const BLOCK = 10_000_000n;
const BLOCK_DIGITS = 20 - BLOCK.toString().length + 1;

export interface ManifestEntry {
  path: string;
  first: bigint;
  last: bigint;
  manifest: Manifest;
}

export interface PartitionHistory {
  /** One past the highest `last` of a complete roll; null when no complete roll was found. */
  completeEnd: bigint | null;
  /** `writing` rolls not covered by complete ones, lowest first: to redo exactly. */
  pending: ManifestEntry[];
  /** Complete rolls, newest first (as many as were listed). */
  complete: ManifestEntry[];
  /**
   * `writing` rolls wholly inside what complete rolls cover: left by an archiver that lost the
   * partition mid-roll after another had moved past it. Their files only repeat archived rows.
   */
  stale: ManifestEntry[];
}

/** A consumer group's committed offset as kafkajs reports it ('-1' or '' when there is none). */
export function committedOffsetOf(raw: string | undefined): bigint | null {
  return raw === undefined || raw === '-1' || raw === '' ? null : BigInt(raw);
}

/**
 * The highest offset the archive or the consumer group claims for a partition, when it is beyond
 * what Kafka has (`high`, the partition's high watermark); null when the claim fits. Not null means
 * this history is not the topic's: it was deleted and re-created under the same name (or lost data
 * in an unclean leader election). Archiving on would skip the new offsets below the claim as
 * "already archived", and could overwrite archived files of the same offset ranges.
 */
export function claimBeyondTopic(
  committed: bigint | null,
  history: Pick<PartitionHistory, 'completeEnd' | 'pending'>,
  high: bigint,
): bigint | null {
  let claim = committed ?? 0n;
  if (history.completeEnd !== null && history.completeEnd > claim) claim = history.completeEnd;
  for (const e of history.pending) if (e.last + 1n > claim) claim = e.last + 1n;
  return claim > high ? claim : null;
}

/** A partition whose archived history is not the topic's (see claimBeyondTopic): not archived until an operator acts. */
export class ArchiveLineageError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_ARCHIVE_LINEAGE';
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly claimed: bigint,
    readonly high: bigint,
  ) {
    super(
      `ARCHIVE LINEAGE: ${topic}/${partition} has offsets up to ${high - 1n} but the archive or the group claims up to ${claimed - 1n}; ` +
        'the topic was probably deleted and re-created under the same name. Not archiving this partition (nothing is skipped or overwritten): ' +
        "move this topic's manifests (_manifest/<topic>/) and data files out of the archive, or point archive.url at a new prefix, and reset the group's offsets.",
    );
  }
}

function blockOf(offset: bigint): bigint {
  return offset / BLOCK;
}

async function readManifest(
  storage: ArchiveStorage,
  path: string,
  logger: Logger,
): Promise<ManifestEntry | null> {
  const range = parseManifestPath(path);
  if (!range) return null;
  const body = await storage.get(path);
  if (!body) return null;
  try {
    const manifest = parseArchiveJson(ManifestSchema, body, path);
    if (BigInt(manifest.first) !== range.first || BigInt(manifest.last) !== range.last) {
      logger.error({ path }, 'archive manifest disagrees with its name; ignored');
      return null;
    }
    return { path, first: range.first, last: range.last, manifest };
  } catch (err) {
    // A manifest is written with one durable put, so a broken one was damaged from outside.
    logger.error({ path, err }, 'unreadable archive manifest; ignored');
    return null;
  }
}

/**
 * @param committed the group's committed offset for the partition, or null when it has none (then
 *   every manifest of the partition is listed once, since nothing says where to look).
 */
export async function readPartitionHistory(
  storage: ArchiveStorage,
  topic: string,
  partition: number,
  committed: bigint | null,
  logger: Logger,
): Promise<PartitionHistory> {
  const prefix = manifestPrefix(topic, partition);
  const paths: string[] = [];
  if (committed === null) {
    for await (const p of storage.list(prefix)) paths.push(p);
  } else {
    let block = blockOf(committed) > 0n ? blockOf(committed) - 1n : 0n;
    let reachAtLeast = blockOf(committed);
    for (; block <= reachAtLeast; block++) {
      for await (const p of storage.list(prefix + pad20(block * BLOCK).slice(0, BLOCK_DIGITS))) {
        paths.push(p);
        const range = parseManifestPath(p);
        // A roll may end in a later block; the next roll then starts there, so look there too.
        if (range && blockOf(range.last + 1n) > reachAtLeast) reachAtLeast = blockOf(range.last + 1n);
      }
    }
  }
  const entries: ManifestEntry[] = [];
  for (const path of paths) {
    const entry = await readManifest(storage, path, logger);
    if (entry) entries.push(entry);
  }
  entries.sort((a, b) =>
    a.first < b.first ? -1 : a.first > b.first ? 1 : a.last < b.last ? -1 : a.last > b.last ? 1 : 0,
  );
  let completeEnd: bigint | null = null;
  const complete: ManifestEntry[] = [];
  for (const e of entries) {
    if (e.manifest.state !== 'complete') continue;
    complete.push(e);
    if (completeEnd === null || e.last + 1n > completeEnd) completeEnd = e.last + 1n;
  }
  const pending = entries.filter(
    (e) => e.manifest.state === 'writing' && (completeEnd === null || e.last >= completeEnd),
  );
  const stale = entries.filter((e) => e.manifest.state === 'writing' && covered(e, complete));
  return { completeEnd, pending, complete: complete.reverse(), stale };
}

/** True when complete rolls cover every offset of `e` (gaps, e.g. from a loss, do not count). */
function covered(e: ManifestEntry, complete: ManifestEntry[]): boolean {
  let next = e.first;
  for (const c of [...complete].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0))) {
    if (c.first > next) break;
    if (c.last >= next) next = c.last + 1n;
    if (next > e.last) return true;
  }
  return false;
}

/**
 * eventIDs (as dedup keys) of the newest complete rolls, oldest first, at most about `limit` of them
 * and from at most `maxManifests` rolls. Rows of `writing` rolls are never included: those rolls
 * are redone, and their rows must be written again, not skipped.
 */
export async function recentDedupKeys(
  storage: ArchiveStorage,
  history: PartitionHistory,
  limit: number,
  maxManifests: number,
  logger: Logger,
): Promise<string[]> {
  const chunks: string[][] = [];
  let total = 0;
  const moved: MovedCache = new Map();
  const taken = new Set<KeyIndexRow[]>();
  for (const entry of history.complete.slice(0, maxManifests)) {
    if (total >= limit) break;
    const keys: string[] = [];
    const where = /^_manifest\/([^/]+)\/(\d+)\//.exec(entry.path);
    for (const file of entry.manifest.files) {
      const found = await readKeyIndex(storage, file);
      if (!found) {
        // A compacted hour (docs/decisions/0037): the roll's rows are in the compaction's files, with their partition.
        const rows = await rowsMovedByCompaction(storage, file, moved);
        // Several rolls went into one compacted file: its rows are added once.
        if (rows && taken.has(rows)) continue;
        if (rows) taken.add(rows);
        for (const row of rows ?? [])
          if (row.partition === Number(where?.[2]) && safeSegment(row.topic ?? '') === where?.[1])
            keys.push(`${row.kind === 'remove' ? 'r' : 'x'}:${row.eventID}`);
        if (rows) continue;
        const path = indexPathFor(file);
        logger.warn({ path }, 'key index of a complete roll is missing; its eventIDs are not de-duplicated');
        continue;
      }
      const { path, body } = found;
      try {
        const index = parseArchiveJson(KeyIndexSchema, body, path);
        for (const row of index.rows) keys.push(`${row.kind === 'remove' ? 'r' : 'x'}:${row.eventID}`);
      } catch (err) {
        logger.warn({ path, err }, 'unreadable key index; its eventIDs are not de-duplicated');
      }
    }
    chunks.push(keys);
    total += keys.length;
  }
  return chunks.reverse().flat();
}
