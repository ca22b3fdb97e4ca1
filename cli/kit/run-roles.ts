import type { Logger } from '../../core/logger';
import { ValidationError } from '../../core/errors';
import type { ShutdownCoordinator } from './shutdown';
import type { ErrorCode } from '../../core/error-codes';
import { TtlstreamError } from '../../core/errors';

export const ROLE_NAMES = ['api', 'scanner', 'producer', 'archiver', 'streams'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** How long a stop waits for a role that is still starting (see startRoles). */
export const STOP_WAITS_FOR_START_MS = 2000;

/** Start order: consumers of work before its producers, so the stop order (the reverse) drains the pipeline. */
const START_ORDER: RoleName[] = ['archiver', 'streams', 'producer', 'scanner', 'api'];

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
 * Starts the chosen roles at once, each on its own: none waits for another to be up. After a SIGKILL
 * the archiver's start waits for its consumer group to rebalance, which lasts until the dead member's
 * session times out (30 s by default); started one after the other, the scanner and producer waited
 * for that too and no item was deleted meanwhile (docs/decisions/0006; test/integration/cli/run-restart.test.ts).
 *
 * Stops are registered up front in pipeline order, so the stop order (the reverse) still drains the
 * pipeline whichever start finishes first; a role still starting when the stop comes is waited for
 * at most STOP_WAITS_FOR_START_MS (then stopped if its start settles before the process exits). A role that fails to start stops the
 * others and exits 1 (an operator must see it, not a half-running process).
 */
export async function startRoles(
  roles: RoleName[],
  starters: Record<RoleName, RoleStarter>,
  coordinator: ShutdownCoordinator,
  logger: Logger,
): Promise<RoleName[]> {
  if (coordinator.isShuttingDown) return [];
  // ttlstream_role_up (TtlstreamRoleAbsent). Loaded here, not at the top: `run --help` builds this module's command.
  const { metrics } = await import('../../core/metrics');
  const chosen = START_ORDER.filter((r) => roles.includes(r));
  const started = new Map<RoleName, RunningRole>();
  let failure: RoleStartError | undefined;
  const starting = chosen.map((role) => {
    const running = Promise.resolve()
      .then(() => starters[role]())
      .then(
        (r) => {
          started.set(role, r);
          // A role whose start settles after the stop began is stopped at once: not reported as running.
          if (!coordinator.isShuttingDown) metrics.roleUp.set({ role }, 1);
          logger.info({ role }, 'role started');
          return r;
        },
        (err: unknown) => {
          // A start cut short by the stop (its clients closed under it) is not a failure.
          if (coordinator.isShuttingDown && failure === undefined) {
            logger.warn({ err, role }, 'role stopped while starting');
            return undefined;
          }
          logger.error({ err, role }, 'role failed to start');
          failure ??= new RoleStartError(
            `${role} failed to start: ${(err as Error).message ?? String(err)}`,
            { cause: err },
          );
          void coordinator.shutdown(`${role} failed to start`, 1);
          return undefined;
        },
      );
    coordinator.add(role, async () => {
      const up = started.get(role);
      if (up) {
        metrics.roleUp.remove({ role });
        return up.stop();
      }
      // Still starting: waited for briefly, so stops keep their order; not longer (the archiver waiting
      // for its group's rebalance can take the dead member's whole session, and a stop soon after a
      // restart would outlast its budget). The process then exits under it, which every role survives
      // as a crash; if its start settles before that, it is stopped.
      const stopped = running.then((r) => r?.stop());
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        stopped,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WAITS_FOR_START_MS).unref())),
      ]);
      clearTimeout(timer);
    });
    return running;
  });
  await Promise.all(starting);
  if (failure) throw failure;
  return chosen.filter((r) => started.has(r));
}

/** A role failed to start; `cause` says why (a bad setting there keeps exit code 2). */
export class RoleStartError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_ROLE_START';
}
