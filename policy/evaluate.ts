import { ValidationError } from '../core/errors';
import { isBoolTrue } from './attribute-value';
import { MAX_INSTANT_MS } from './constants';
import { evaluateCosmos } from './modes/cosmos';
import { evaluateDynamo } from './modes/dynamodb';
import { evaluateMongo } from './modes/mongo';
import type { TableTtlSettings } from './settings';
import type { Evaluation, Item } from './types';

/**
 * The policy engine's verdict for one item at one instant. Pure: the same settings, item and
 * `nowMs` always give the same answer. See policy/README.md for the rules of each mode.
 */
export function evaluate(settings: TableTtlSettings, item: Item, nowMs: number): Evaluation {
  assertInstant(nowMs, 'nowMs');
  const verdict = evaluatePolicy(settings, item, nowMs);
  // A legal hold overrides any verdict; it keeps the expiry (when there is one) for the preview.
  if (settings.legalHoldAttribute !== undefined && isBoolTrue(item[settings.legalHoldAttribute])) {
    return verdict.kind === 'expires' ? { kind: 'held', expiresAtMs: verdict.expiresAtMs } : { kind: 'held' };
  }
  return verdict;
}

/** True only for an `expires` verdict whose time has come: the one verdict that allows deletion. */
export function isExpired(e: Evaluation): boolean {
  return e.kind === 'expires' && e.expired;
}

function evaluatePolicy(settings: TableTtlSettings, item: Item, nowMs: number): Evaluation {
  const policy = settings.policy;
  switch (policy.mode) {
    case 'dynamodb':
      return evaluateDynamo(policy, item, nowMs);
    case 'cosmos':
      return evaluateCosmos(policy, item, nowMs);
    case 'mongo':
      return evaluateMongo(policy, item, nowMs);
    default:
      // Reachable only with settings that bypassed TableTtlSettingsSchema.
      throw new ValidationError(`unknown TTL mode ${JSON.stringify((policy as { mode: unknown }).mode)}`);
  }
}

export function assertInstant(value: number, name: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > MAX_INSTANT_MS) {
    throw new ValidationError(`${name} must be a finite epoch time in milliseconds, got ${String(value)}`);
  }
}
