import type { Item } from '../../policy/types';
import { keyDigest, type AttributeMap } from '../../schemas';
import { normalizeKey } from '../../archive/catalog';

/**
 * How `audit` prints an item's key: the catalog's canonical JSON (numbers in one spelling, so an archived key and
 * the same key read from the table print alike), or with `hashKeys` its `keyDigest` (the erasure ledger's digest).
 * `canonical` is the key index's form of the key: already canonical unless a Number in it is spelled otherwise, so
 * only then is the key normalised again (it costs a JSON round trip per row).
 */
export function auditKey(
  table: string,
  keys: AttributeMap | Item,
  options: { hashKeys: boolean; canonical?: string },
): string {
  if (options.hashKeys) return keyDigest(table, keys as AttributeMap);
  if (options.canonical !== undefined && !options.canonical.includes('"N":')) return options.canonical;
  return normalizeKey(keys as Item);
}
