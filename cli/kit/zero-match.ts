import { openCatalog } from '../../archive/catalog';
import { decodeSegment, type ArchiveStorage } from '../../archive/storage';
import type { CliContext } from './context';
import { EXIT } from './exit-codes';

export interface MatchQuery {
  table: string;
  /** DynamoDB JSON of one item key (object or its JSON text). */
  key?: Record<string, unknown> | string;
  keyPrefix?: string;
  fromMs?: number;
  toMs?: number;
}

/** `pk (S), sk (N)` from an archived key's DynamoDB JSON. */
export function keyShape(key: Record<string, unknown>): string {
  return Object.entries(key)
    .map(([name, v]) => `${name} (${Object.keys(v as object)[0] ?? '?'})`)
    .sort()
    .join(', ');
}

/**
 * Why a restore, replay or `archive show` found nothing, in one sentence an operator can act on:
 * the table is not in the archive (and which are), or a key cannot match the archived key schema
 * (name or type), or nothing was archived for it in the window. Read only when the answer is 0.
 */
export async function explainNoMatch(storage: ArchiveStorage, q: MatchQuery): Promise<string> {
  const catalog = openCatalog(storage);
  let sample: Record<string, unknown> | undefined;
  for await (const row of catalog.scan(q.table)) {
    sample = JSON.parse(row.key) as Record<string, unknown>;
    break;
  }
  if (!sample) {
    const others = new Set<string>();
    for await (const path of storage.list('table=')) {
      const m = /^table=([^/]+)\//.exec(path);
      const name = m?.[1] ? decodeSegment(m[1]) : null;
      if (name) others.add(name);
      if (others.size >= 10) break;
    }
    const list = [...others].sort().join(', ');
    return `the archive at ${storage.root} holds no records of table ${q.table}${list ? ` (it has: ${list})` : ' (it is empty)'}`;
  }
  const schema = keyShape(sample);
  const window =
    q.fromMs !== undefined || q.toMs !== undefined
      ? ` deleted ${q.fromMs !== undefined ? `from ${new Date(q.fromMs).toISOString()} ` : ''}${q.toMs !== undefined ? `until ${new Date(q.toMs).toISOString()}` : ''}`.trimEnd()
      : '';
  if (q.key !== undefined) {
    const key = (typeof q.key === 'string' ? JSON.parse(q.key) : q.key) as Record<string, unknown>;
    const given = keyShape(key);
    if (given !== schema) {
      return `key ${given} cannot match: ${q.table}'s archived keys are ${schema}`;
    }
    return `no archived deletion of that key of ${q.table}${window} (keys are ${schema})`;
  }
  if (q.keyPrefix !== undefined) {
    return `no archived key of ${q.table} whose hash key starts with "${q.keyPrefix}"${window} (keys are ${schema})`;
  }
  return `no archived deletions of ${q.table}${window}`;
}

/** The flags of a command that reads a table's archive (`archive show`, restore, replay), as its no-match needs them. */
export interface NoMatchFlags {
  table: string;
  key?: Record<string, unknown> | string;
  keyPrefix?: string;
  from?: number;
  to?: number;
  failIfEmpty?: boolean;
}

/** Says on stderr why nothing matched; the exit code is EXIT.empty with --fail-if-empty, else 0. */
export async function reportNoMatch(
  ctx: CliContext,
  storage: ArchiveStorage,
  flags: NoMatchFlags,
): Promise<number> {
  const q: MatchQuery = {
    table: flags.table,
    key: flags.key,
    keyPrefix: flags.keyPrefix,
    fromMs: flags.from,
    toMs: flags.to,
  };
  ctx.io.stderr.write(`ttlstream: nothing matched: ${await explainNoMatch(storage, q)}\n`);
  return flags.failIfEmpty ? EXIT.empty : EXIT.ok;
}
