import { KeyIndexSchema, parseArchiveJson, type KeyIndex, type KeyIndexRow } from './layout';

/**
 * A key index as compaction reads it, hour after hour: its head checked by KeyIndexSchema, its rows (most of its
 * bytes, thousands of them) by the plain checks below, which accept exactly what KeyIndexRowSchema accepts or less.
 * An index they refuse goes through KeyIndexSchema whole: its error names the path and the field, as every other
 * reader's does (and an index they were stricter on than the schema is taken as the schema gives it).
 */

const text = (v: unknown): v is string => typeof v === 'string';
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const natural = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

function isRow(v: unknown): v is KeyIndexRow {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const r = v as Record<string, unknown>;
  return (
    text(r.key) &&
    nonEmpty(r.eventID) &&
    (r.kind === 'remove' || r.kind === 'retract') &&
    (r.retractsEventID === undefined || nonEmpty(r.retractsEventID)) &&
    Number.isSafeInteger(r.deletedAtMs) &&
    text(r.sequenceNumber) &&
    natural(r.row) &&
    (r.topic === undefined || nonEmpty(r.topic)) &&
    (r.partition === undefined || natural(r.partition))
  );
}

/**
 * The key index in `body`. Its rows are the parsed objects themselves: read their known fields only (a field the
 * schema does not know is still on them).
 */
export function parseKeyIndexRows(body: Buffer, path: string): KeyIndex {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch {
    return parseArchiveJson(KeyIndexSchema, body, path); // its error names the path
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !('rows' in raw))
    return parseArchiveJson(KeyIndexSchema, body, path);
  const { rows } = raw;
  if (!Array.isArray(rows) || !rows.every(isRow)) return parseArchiveJson(KeyIndexSchema, body, path);
  const head = KeyIndexSchema.safeParse({ ...raw, rows: [] });
  if (!head.success) return parseArchiveJson(KeyIndexSchema, body, path);
  return { ...head.data, rows };
}
