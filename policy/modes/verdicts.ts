import type { Evaluation } from '../types';

export function expiresAt(expiresAtMs: number, nowMs: number, looksLikeMillis: boolean): Evaluation {
  return { kind: 'expires', expiresAtMs, expired: expiresAtMs <= nowMs, looksLikeMillis };
}
