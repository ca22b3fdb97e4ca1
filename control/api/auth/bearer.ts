import { createHash, timingSafeEqual } from 'node:crypto';
import { TtlstreamError } from '../../../core/errors';
import type { ErrorCode } from '../../../core/error-codes';

/** Missing or wrong credentials on the REST API; answered 401 with a WWW-Authenticate challenge. */
export class UnauthorizedError extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_UNAUTHORIZED';
}

/**
 * Bearer tokens from `config.api.tokens`. Tokens are compared as SHA-256 digests with
 * timingSafeEqual: equal-length inputs whatever the presented token, and every configured token is
 * checked so the time taken does not reveal which one (or whether any) matched.
 */
export class BearerTokens {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  get configured(): boolean {
    return this.digests.length > 0;
  }

  /**
   * The identity of the matching token (`token#<index in config.api.tokens>`, never the token
   * itself), or undefined.
   */
  match(presented: string): string | undefined {
    const given = digest(presented);
    let found = -1;
    this.digests.forEach((d, i) => {
      if (timingSafeEqual(d, given) && found < 0) found = i;
    });
    return found >= 0 ? `token#${found}` : undefined;
  }

  /** Verify an Authorization header value; returns the token identity or throws UnauthorizedError. */
  authenticate(authorization: string | undefined): string {
    if (!this.configured) {
      throw new UnauthorizedError(
        'this call needs a bearer token, and no tokens are configured (api.tokens)',
      );
    }
    if (authorization === undefined || authorization.trim() === '') {
      throw new UnauthorizedError('missing Authorization header: expected "Authorization: Bearer <token>"');
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization.trim());
    if (!m) throw new UnauthorizedError('malformed Authorization header: expected "Bearer <token>"');
    const identity = this.match(m[1] as string);
    if (!identity) throw new UnauthorizedError('invalid bearer token');
    return identity;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
