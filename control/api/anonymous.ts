/**
 * What an anonymous (open) read may see. Open reads exist for dashboards and status checks; they must
 * not hand out item keys (which can be e-mail addresses or other personal data), the identities of
 * the people and keys who changed settings (`changedBy` carries access key ids), or a scan whose cost
 * the caller chooses.
 */

/** Items an anonymous preview scans at most, whatever `limit` asks for. */
export const OPEN_READ_PREVIEW_LIMIT = 1000;

/** A copy without the audit identities (`changedBy`, `confirmedBy`, ...: every key ending in "By"). */
export function withoutIdentities<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([k]) => !/By$/.test(k))) as T;
}
