import type { TableTtlSettings } from './settings';

/**
 * The top-level attributes `evaluate` reads, so the scanner can project only them (key attributes
 * are the caller's to add). Every attribute the verdict depends on is here, the legal hold included:
 * evaluating a projection that missed one could turn "held" into "expired".
 */
export function relevantAttributes(settings: TableTtlSettings): string[] {
  const policy = settings.policy;
  const attributes: string[] = [];
  switch (policy.mode) {
    case 'dynamodb':
      attributes.push(policy.attributeName);
      break;
    case 'cosmos':
      attributes.push(policy.ttlAttribute, policy.lastWriteAttribute);
      break;
    case 'mongo':
      attributes.push(policy.timeField);
      break;
  }
  if (settings.legalHoldAttribute !== undefined) attributes.push(settings.legalHoldAttribute);
  return [...new Set(attributes)];
}
