import { ValidationError } from '../../core/errors';

/** A JSON body with a key that could reach an object's prototype: refused, and named, not called invalid JSON. */
export class ForbiddenKeyError extends ValidationError {
  constructor(readonly key: string) {
    super(`forbidden key "${key}"`);
  }
}

/**
 * JSON.parse that refuses `__proto__` anywhere and `constructor` holding a `prototype` (what fastify's parser
 * refuses too, but reports as invalid JSON). Throws SyntaxError for text that is not JSON.
 */
export function parseJsonBody(text: string): unknown {
  let forbidden: string | undefined;
  const value = JSON.parse(text, (key: string, v: unknown) => {
    if (key === '__proto__') forbidden ??= key;
    if (key === 'constructor' && typeof v === 'object' && v !== null && Object.hasOwn(v, 'prototype'))
      forbidden ??= 'constructor.prototype';
    return v;
  }) as unknown;
  if (forbidden !== undefined) throw new ForbiddenKeyError(forbidden);
  return value;
}
