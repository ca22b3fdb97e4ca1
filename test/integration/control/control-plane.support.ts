import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { ConfigInput, TtlstreamConfig } from '../../../core/config';
import { createDynamoClient } from '../../../core/clients';
import { apiOptionsFrom, buildApiServer } from '../../../control/api/server';
import { TtlSettingsStore } from '../../../control/settings-store';
import { testConfig, uniqueName } from '../../support/stack';
import { capturingLogger } from '../../support/logger';
import { settingsStoreOf } from '../../support/settings-store';

export { http } from '../../support/control-api';

export const TOKEN = 'integration-token-0123456789';
export const AWS_KEY = {
  accessKeyId: 'AKIDTTLSTREAMIT',
  secretAccessKey: 'it-secret-abcdefghijklmnopqrstuv',
};

export interface ControlPlane {
  app: FastifyInstance;
  base: string;
  config: TtlstreamConfig;
  ddb: DynamoDBClient;
  store: TtlSettingsStore;
  logs: ReturnType<typeof capturingLogger>;
  close(): Promise<void>;
}

/**
 * A control plane on a random port, against the real DynamoDB API, with its own control table (so
 * concurrent runs do not share settings) and a short propagation delay.
 */
export async function startControlPlane(
  options: { propagationMs?: number; api?: ConfigInput['api'] } = {},
): Promise<ControlPlane> {
  const config = testConfig({
    tables: { control: uniqueName('ctl'), marks: uniqueName('marks') },
    api: {
      tokens: [TOKEN],
      // A copy: the AWS SDK stamps a `$source` marker on credential objects it has used, which strict config
      // validation rightly refuses as an unknown key.
      awsCredentials: [{ accessKeyId: AWS_KEY.accessKeyId, secretAccessKey: AWS_KEY.secretAccessKey }],
      ttlPropagationMs: options.propagationMs ?? 400,
      ...options.api,
    },
  });
  const ddb = createDynamoClient(config);
  const store = settingsStoreOf(ddb, config);
  const logs = capturingLogger();
  const app = buildApiServer({ options: apiOptionsFrom(config), ddb, store, logger: logs.logger });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    base,
    config,
    ddb,
    store,
    logs,
    async close() {
      await app.close();
      ddb.destroy();
    },
  };
}

/** Wait until `at` (ms since epoch) has passed, plus a little for clock granularity. */
export async function waitUntil(at: number): Promise<void> {
  const left = at - Date.now();
  if (left > -5) await sleep(left + 20);
}
