import { Command } from 'commander';
import { example, type CommandEnv } from '../kit/command-kit';

/** `ttlstream api openapi`: the control plane's contract, for client generators, gateways and fuzzers. */
export function apiCommand(env: CommandEnv): Command {
  const api = new Command('api').description("the control plane's REST API as a machine-readable contract");
  const openapi = new Command('openapi')
    .description(
      'print the OpenAPI 3.1 document of the REST API (what GET /openapi.json serves), generated from the route ' +
        'schemas the server validates with; the DynamoDB-compatible endpoint is described by AWS’s own model',
    )
    // No configuration or service is needed: the document is part of this release. Hence no action() context.
    .action(() => printOpenApi(env));
  example(openapi, 'ttlstream api openapi > openapi.json');
  return api.addCommand(openapi);
}

async function printOpenApi(env: CommandEnv): Promise<void> {
  const { openApiDocumentText } = await import('../../control/api/document');
  env.io.stdout.write(await openApiDocumentText());
}
