import { createDynamoClient } from '../../core/clients';
import { parseConfig } from '../../core/config';
import { silentLogger } from '../../core/logger';
import { TtlSettingsStore } from '../settings-store';
import { apiOptionsFrom, buildApiServer } from './server';

/**
 * The control plane's OpenAPI document as text, made by building the server (no service is called: the routes are
 * only registered) and asking @fastify/swagger for it. What `GET /openapi.json` serves and `ttlstream api openapi`
 * prints; docs/openapi.json is a copy that a unit test keeps equal to it. The default configuration: nothing in the
 * document depends on settings.
 */
export async function openApiDocumentText(): Promise<string> {
  const config = parseConfig({});
  const ddb = createDynamoClient(config);
  const store = new TtlSettingsStore(ddb, { controlTable: config.tables.control, propagationMs: 0 });
  const app = buildApiServer({ options: apiOptionsFrom(config), ddb, store, logger: silentLogger });
  try {
    await app.ready();
    return JSON.stringify(app.swagger(), null, 2) + '\n';
  } finally {
    await app.close();
    ddb.destroy();
  }
}
