import { ConfigError } from './errors';

/** A bearer token and when it stops being valid (ms since the epoch); undefined when the token does not say. */
export interface ExpiringToken {
  token: string;
  expiresAt: number | undefined;
}

/** Share of a token's lifetime after which it is fetched again: Kafka's Java client's default (refresh.window.factor). */
export const REFRESH_FACTOR = 0.8;
/** A token that does not say when it expires is fetched again this often. */
export const UNKNOWN_LIFETIME_REFRESH_MS = 5 * 60_000;

/**
 * Caches a token and fetches a new one once REFRESH_FACTOR of its lifetime has passed, so a connection that
 * authenticates (a new one, or a re-authentication the broker asks for) never presents an expiring token.
 * Concurrent callers share one fetch; a fetch that fails is not cached, so the next caller tries again.
 */
export class RefreshingToken {
  private current: { token: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly fetch: () => Promise<ExpiringToken>,
    /** Names the token's source in errors, e.g. "kafka.sasl.tokenFile /run/token". */
    private readonly source: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** When the cached token will be replaced (tests, the debug log). */
  get refreshAt(): number | undefined {
    return this.current?.refreshAt;
  }

  async get(): Promise<string> {
    if (this.current && this.now() < this.current.refreshAt) return this.current.token;
    this.pending ??= this.fetchNew().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchNew(): Promise<string> {
    const fetchedAt = this.now();
    const { token, expiresAt } = await this.fetch();
    if (expiresAt !== undefined && expiresAt <= fetchedAt)
      throw new TokenError(`${this.source}: the token expired at ${new Date(expiresAt).toISOString()}`);
    const lifetime =
      expiresAt === undefined ? UNKNOWN_LIFETIME_REFRESH_MS : (expiresAt - fetchedAt) * REFRESH_FACTOR;
    this.current = { token, refreshAt: fetchedAt + lifetime };
    return token;
  }
}

/**
 * A token could not be had (its command failed, its file is missing, it already expired): a ConfigError naming
 * kafka.sasl's token setting. Not retriable for kafkajs either (its retrier reads `retriable`): a retry would only
 * run the same command again.
 */
export class TokenError extends ConfigError {
  readonly retriable = false;
}

/**
 * The text of a token source: a JWT (its `exp` claim gives the expiry), `{"token": …, "expiresAt": ms}`, or an
 * opaque token (expiry unknown).
 */
export function parseTokenText(text: string, source: string): ExpiringToken {
  const trimmed = text.trim();
  if (trimmed === '') throw new TokenError(`${source}: empty token`);
  if (trimmed.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new TokenError(`${source}: starts with "{" but is not valid JSON`);
    }
    const { token, expiresAt } = parsed as { token?: unknown; expiresAt?: unknown };
    if (typeof token !== 'string' || token === '')
      throw new TokenError(`${source}: JSON without a "token" string`);
    if (expiresAt !== undefined && typeof expiresAt !== 'number')
      throw new TokenError(`${source}: "expiresAt" is not a number of milliseconds since the epoch`);
    return { token, expiresAt };
  }
  return { token: trimmed, expiresAt: jwtExpiry(trimmed) };
}

/** The `exp` claim of a JWT in ms, or undefined when the token is not a JWT or has none. */
export function jwtExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
