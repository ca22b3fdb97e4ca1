import type { ConfigInput, TtlstreamConfig } from '../../core/config';
import { deepMerge } from './deep-merge';
import { motoEndpoint } from './ports';
import { testConfig } from './stack';

/**
 * The DynamoDB-API servers every lane runs (infra/): dynalite, every suite's server by default (endpoints.json
 * `dynamodb`), and moto's server, a second implementation (endpoints.json `moto`, port 18002 + 100 × lane) that
 * keeps numbers as written. A suite that runs on both says so once and takes its endpoint from here:
 *
 *     describe.each(DYNAMO_SERVERS)('restore (%s)', (server) => {
 *       const config = serverConfig(server);
 *       const it = caseOn(server, { moto: MOTO_DEFECTS.binaryKeyParallelScan });   // only where moto is wrong
 *
 * docs/decisions/0040 says which suites run on both and why those.
 */
export type DynamoServer = 'dynalite' | 'moto';

export const DYNAMO_SERVERS: readonly DynamoServer[] = ['dynalite', 'moto'];

/**
 * What moto's server (5.2.5) does otherwise than DynamoDB: a moto variant leaves a case that depends on it out for
 * this reason, or (projected numbers) the product must not depend on it. test/integration/smoke/dynamodb.test.ts
 * checks that each is still so, so a case is not left out after moto mends it; docs/decisions/0040 describes each.
 */
export const MOTO_DEFECTS = {
  binaryKeyParallelScan:
    'moto fails every parallel Scan (Segment/TotalSegments) of a table whose hash key is binary: HTTP 500 with an HTML page',
  describeDisabledStream:
    'moto fails DescribeStream (HTTP 500) of a stream that UpdateTable turned off, where DynamoDB describes it DISABLED',
  projectedNumbers:
    'moto re-spells numbers under a ProjectionExpression (Python Decimal: 1e3 comes back 1E+3, 1000 as 1000)',
} as const;

/** The server's DynamoDB endpoint (the lane's). */
export function dynamoEndpoint(server: DynamoServer): string {
  return server === 'moto' ? motoEndpoint() : (testConfig().dynamodb.endpoint ?? '');
}

/** Configuration overrides that point at `server`, with the caller's on top (for pipelineConfig and the like). */
export function onServer(server: DynamoServer, overrides: ConfigInput = {}): ConfigInput {
  if (server === 'dynalite') return overrides;
  return deepMerge<ConfigInput>({ dynamodb: { endpoint: motoEndpoint() } }, overrides);
}

/** testConfig (the lane's local stack) with `server` as its DynamoDB endpoint, and the caller's overrides on top. */
export function serverConfig(server: DynamoServer, overrides: ConfigInput = {}): TtlstreamConfig {
  return testConfig(onServer(server, overrides));
}

/** The environment that points a `ttlstream` process at `server` (the lane's endpoints file names dynalite). */
export function serverEnv(server: DynamoServer): NodeJS.ProcessEnv {
  return server === 'moto' ? { TTLSTREAM_DYNAMODB_ENDPOINT: motoEndpoint() } : {};
}

type Case = (name: string, fn: jest.ProvidesCallback, timeout?: number) => void;

/**
 * `it` on `server`, unless `leftOut` names the server: then the case is not registered there, for the reason given.
 * Either the server lacks or gets wrong what the case needs (MOTO_DEFECTS; dynalite has no TransactWriteItems and
 * refuses a GSI added by UpdateTable), or the case tests ttlstream's own logic, which the other server's run covers,
 * and the moto variants' time budget has no room for it (docs/decisions/0040 lists the cases each leaves out).
 */
export function caseOn(server: DynamoServer, leftOut: Partial<Record<DynamoServer, string>>): Case {
  const reason = leftOut[server];
  if (reason === undefined) return it;
  if (reason.trim() === '') throw new Error(`caseOn: a case left out on ${server} needs the reason`);
  return () => undefined;
}
