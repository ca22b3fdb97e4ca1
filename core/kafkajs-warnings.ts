import { sep } from 'node:path';

/**
 * kafkajs 2.2.4 arms its request-queue timer with a negative delay whenever no throttle is active
 * (`src/network/requestQueue/index.js`, `scheduleCheckPendingRequests`: `-1 - Date.now()`). Node has always run such a
 * timer after 1 ms; Node 24 also prints a `TimeoutNegativeWarning` for it, once per process, to stderr, which breaks
 * the CLI's one-line stderr contract and adds noise to every service log although nothing behaves differently.
 *
 * Only that warning, raised from inside kafkajs' request queue, is dropped; every other warning still reaches
 * Node's handler (including a negative timeout set anywhere else). Idempotent.
 */
export function muteKafkajsNegativeTimeoutWarning(): void {
  if (installed) return;
  installed = true;
  const original = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((...args: unknown[]) => {
    if (isKafkajsNegativeTimeoutWarning(args, new Error().stack ?? '')) return;
    original(...args);
  }) as typeof process.emitWarning;
}

let installed = false;

const REQUEST_QUEUE = `${sep}kafkajs${sep}src${sep}network${sep}requestQueue${sep}`;

/** The arguments of one `process.emitWarning` call and the stack it was called from. */
export function isKafkajsNegativeTimeoutWarning(args: readonly unknown[], stack: string): boolean {
  const [warning, typeOrOptions] = args;
  const type =
    warning instanceof Error
      ? warning.name
      : typeof typeOrOptions === 'string'
        ? typeOrOptions
        : typeof typeOrOptions === 'object' && typeOrOptions !== null && 'type' in typeOrOptions
          ? String(typeOrOptions.type)
          : undefined;
  return type === 'TimeoutNegativeWarning' && stack.includes(REQUEST_QUEUE);
}
