import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FastifyRequest } from 'fastify';
import type { Logger } from '../../core/logger';
import type { TtlSettingsStore } from '../settings-store';
import type { BearerTokens } from './auth/bearer';
import type { ApiOptions } from './options';

/** What buildApiServer needs. */
export interface ApiDeps {
  /** Its slice of the configuration, resolved at start-up: `apiOptionsFrom(config)`. */
  options: ApiOptions;
  ddb: DynamoDBClient;
  store: TtlSettingsStore;
  logger: Logger;
}

/** What every route plugin receives as its options. */
export interface RouteContext extends ApiDeps {
  bearer: BearerTokens;
  /**
   * An onRequest hook for reading routes: authenticates before the input is validated, so a caller without
   * credentials gets 401 whatever the path or query, and learns nothing from validation.
   */
  authenticateRead(request: FastifyRequest): Promise<void>;
  /**
   * Throws UnauthorizedError unless the request may read (open reads, or a valid token).
   * `anonymous`: an open read without a credential, whose answer must carry no item keys or identities.
   */
  authorizeRead(request: FastifyRequest): { anonymous: boolean };
  /**
   * An onRequest hook for mutating routes: authenticates before the body is read, so an anonymous
   * caller gets 401 whatever the body (size, JSON, media type) and learns nothing from validation.
   */
  authenticateWrite(request: FastifyRequest): Promise<void>;
  /** Returns the caller's identity for changedBy, or throws UnauthorizedError. */
  authorizeWrite(request: FastifyRequest): string;
  /** Names the request in the ttlstream_api_requests_total route label (default: method and route). */
  labelRoute(request: FastifyRequest, label: string): void;
}
