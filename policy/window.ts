import { evaluate } from './evaluate';
import type { TableTtlSettings } from './settings';
import type { Item } from './types';

/**
 * TTL instants against a window, for `ttlstream audit` (docs/compliance.md): pure, the same verdicts the scanner and the
 * producer reach, so the audit judges an item exactly as the deletion did.
 */

/** A window of TTL instants in epoch ms: `fromMs` inclusive, `toMs` exclusive. */
export interface TtlWindow {
  fromMs: number;
  toMs: number;
}

export function inTtlWindow(ms: number, window: TtlWindow): boolean {
  return ms >= window.fromMs && ms < window.toMs;
}

/**
 * The TTL instant of a deleted item's image under `settings`, judged at the deletion time: the instant that made
 * it expire, or null when these settings give it none (TTL off, no attribute, an ignored value: settings that
 * changed since the deletion). A held image keeps its instant: the hold does not move the expiry.
 */
export function ttlInstantOf(settings: TableTtlSettings, image: Item, deletedAtMs: number): number | null {
  const verdict = evaluate(settings, image, deletedAtMs);
  if (verdict.kind === 'expires') return verdict.expiresAtMs;
  if (verdict.kind === 'held' && verdict.expiresAtMs !== undefined) return verdict.expiresAtMs;
  return null;
}

/** What an item that exists now says about the window: its TTL passed in it (expired, or kept by a legal hold). */
export type PresentVerdict = { kind: 'expired' | 'held'; expiresAtMs: number } | null;

/**
 * Whether an item that still exists at `nowMs` had its TTL pass inside the window: `expired` (it should be gone),
 * `held` (the legal hold keeps it, legitimately), or null (not yet expired, outside the window, no TTL, or a TTL
 * value the policy ignores: DynamoDB never deletes a malformed one, so neither is it overdue).
 */
export function presentVerdict(
  settings: TableTtlSettings,
  item: Item,
  window: TtlWindow,
  nowMs: number,
): PresentVerdict {
  const verdict = evaluate(settings, item, nowMs);
  if (verdict.kind === 'expires') {
    if (!verdict.expired || !inTtlWindow(verdict.expiresAtMs, window)) return null;
    return { kind: 'expired', expiresAtMs: verdict.expiresAtMs };
  }
  if (verdict.kind === 'held' && verdict.expiresAtMs !== undefined) {
    if (verdict.expiresAtMs > nowMs || !inTtlWindow(verdict.expiresAtMs, window)) return null;
    return { kind: 'held', expiresAtMs: verdict.expiresAtMs };
  }
  return null;
}
