import type { Logger } from '../core/logger';
import { ValidationError } from '../core/errors';
import type { ShutdownCoordinator } from './shutdown';

export const ROLE_NAMES = ['api', 'scanner', 'producer', 'archiver'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** Start order: consumers of work before its producers, so the stop order (the reverse) drains the pipeline. */
const START_ORDER: RoleName[] = ['archiver', 'producer', 'scanner', 'api'];

export interface RunningRole {
  stop(): Promise<void>;
}

export type RoleStarter = () => Promise<RunningRole>;

export function parseRoles(text: string): RoleName[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 0) throw new ValidationError('--roles: name at least one role');
  for (const n of names) {
    if (!(ROLE_NAMES as readonly string[]).includes(n)) {
      throw new ValidationError(`--roles: unknown role "${n}" (roles: ${ROLE_NAMES.join(', ')})`);
    }
  }
  return [...new Set(names)] as RoleName[];
}

/**
 * Starts the chosen roles in pipeline order and registers each one's stop with the coordinator.
 * A signal during start-up stops what already started; a role that fails to start stops the
 * others and exits 1 (an operator must see it, not a half-running process).
 */
export async function startRoles(
  roles: RoleName[],
  starters: Record<RoleName, RoleStarter>,
  coordinator: ShutdownCoordinator,
  logger: Logger,
): Promise<RoleName[]> {
  const started: RoleName[] = [];
  for (const role of START_ORDER.filter((r) => roles.includes(r))) {
    if (coordinator.isShuttingDown) break;
    let running: RunningRole;
    try {
      running = await starters[role]();
    } catch (err) {
      logger.error({ err, role }, 'role failed to start');
      void coordinator.shutdown(`${role} failed to start`, 1);
      throw new RoleStartError(`${role} failed to start: ${(err as Error).message ?? String(err)}`, {
        cause: err,
      });
    }
    if (coordinator.isShuttingDown) {
      // The signal arrived while this role was starting: it was not registered, stop it here.
      await running.stop();
      break;
    }
    coordinator.add(role, () => running.stop());
    started.push(role);
    logger.info({ role }, 'role started');
  }
  return started;
}

export class RoleStartError extends Error {}
