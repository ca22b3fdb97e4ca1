/**
 * `b` merged into `a`, key by key, as configuration overrides are: a plain object in both is merged, anything
 * else in `b` (a value, an array) replaces what `a` has there, and what `b` leaves undefined keeps `a`'s value.
 * An array in `a` is a value too: it is replaced whole, never merged index by index.
 */
export function deepMerge<T>(a: T, b: unknown): T {
  if (typeof a !== 'object' || a === null || Array.isArray(a) || typeof b !== 'object' || b === null)
    return (b ?? a) as T;
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b as Record<string, unknown>)) out[k] = deepMerge(out[k], v);
  return out as T;
}
