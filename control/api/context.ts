import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FastifyRequest } from 'fastify';
import type { TtlstreamConfig } from '../../core/config';
import type { Logger } from '../../core/logger';
import type { TtlSettingsStore } from '../settings-store';
import type { BearerTokens } from './auth/bearer';

/** What buildApiServer needs. */
export interface ApiDeps {
  config: TtlstreamConfig;
  ddb: DynamoDBClient;
  store: TtlSettingsStore;
  logger: Logger;
}

/** What every route plugin receives as its options. */
export interface RouteContext extends ApiDeps {
  bearer: BearerTokens;
  /** Throws UnauthorizedError unless the request may read (open reads, or a valid token). */
  authorizeRead(request: FastifyRequest): void;
  /** Returns the caller's identity for changedBy, or throws UnauthorizedError. */
  authorizeWrite(request: FastifyRequest): string;
  /** Names the request in the ttlstream_api_requests_total route label (default: method and route). */
  labelRoute(request: FastifyRequest, label: string): void;
}
