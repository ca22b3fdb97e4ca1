import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openApiDocumentText } from '../control/api/document';
import { asyncApiDocumentText } from '../schemas/asyncapi';

/**
 * `npm run docs:contracts`: regenerate the machine-readable contracts kept in docs/: the control plane's OpenAPI
 * document (docs/openapi.json) and the stream topics' AsyncAPI document (docs/asyncapi.json). Unit tests fail while
 * either differs from what the code generates.
 */
async function main(): Promise<void> {
  const docs = resolve(__dirname, '..', 'docs');
  for (const [name, text] of [
    ['openapi.json', await openApiDocumentText()],
    ['asyncapi.json', asyncApiDocumentText()],
  ] as const) {
    writeFileSync(resolve(docs, name), text);
    console.log(`wrote ${resolve(docs, name)}`);
  }
}

void main();
