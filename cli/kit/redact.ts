/** Keys whose values are secrets wherever they appear in the configuration. */
const SECRET_KEY = /(secret|password|passphrase|token)/i;
export const REDACTED = '[redacted]';

/** A deep copy with every secret replaced, for `ttlstream config` and start-up logs. */
export function redactSecrets<T>(value: T): T {
  const walk = (v: unknown, secret: boolean): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, secret));
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => [k, walk(x, secret || SECRET_KEY.test(k))]),
      );
    }
    if (secret && v !== undefined) return REDACTED;
    return typeof v === 'string' ? redactUrlCredentials(v) : v;
  };
  return walk(value, false) as T;
}

/** `a.b.c = value` lines, the human form of the effective configuration. */
export function flattenConfig(value: unknown, prefix: string[] = []): Array<[string, string]> {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([k, v]) => flattenConfig(v, [...prefix, k]));
  }
  return [[prefix.join('.'), JSON.stringify(value)]];
}

/**
 * `scheme://user:pass@host/...` → `scheme://[redacted]@host/...`: an endpoint URL can carry
 * credentials under any key name, so every string that looks like a URL is checked.
 */
export function redactUrlCredentials(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, `$1${REDACTED}@`);
}
