import { readdirSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { filesUnder } from '../support/files';
import { unexplained, writtenTwice } from '../support/helper-names';

const ROOT = resolve(__dirname, '..', '..');

/** Not product code: tests, benchmarks, the local stack, and what tools make or install. */
const NOT_PRODUCT = new Set([
  'test',
  'bench',
  'infra',
  'node_modules',
  'dist',
  'coverage',
  '.ttlstream',
  '.git',
]);

/**
 * Names that several product files define at the top level for things that are not the same helper. A helper a
 * second file needs has one home (core/ for every layer, pipeline/ for the scanner and the producer, the folder's
 * own shared file otherwise) and is imported from there. Each entry says why the definitions differ.
 */
const ALLOWED: Record<string, string> = {
  main: "each entry point's own (the archiver process, an example, two generators)",
  sha256Hex:
    "one line of node:crypto in two layers that share nothing else: the archive's seals (archive/chain) and the control plane's SigV4 check",
  deadLetterMessage:
    'the dead letter itself (archiver/dead-letter.ts) and its description in the AsyncAPI document',
  keyOf: "an item's key by its key schema (restore) and the map key of a (topic, kind) pair (schema ids)",
  encodeRow:
    'an archived row as Avro bytes (roll) and a TTL settings row as a DynamoDB item (settings store)',
  keyJson: "an archived key as the key index's JSON (roll) and a key as the preview route's JSON answer",
  describeRow:
    "an archived record as a line of text (cli/archive) and a settings row as a table's TTL description",
  parseValue: 'a Prometheus sample value (cli/status/prometheus.ts) and a DynamoDB AttributeValue (schemas)',
  headerString:
    'an HTTP request header (the DynamoDB-compatible endpoint) and a Kafka message header (schemas)',
  rowKey:
    'the key of a row of each internal table: a settings row (control table) and a mark row (marks table)',
  setting: "the documented name of a setting of each file's own section (kafka.ssl, schemas.registry)",
  isPlainObject:
    'a JSON object of the configuration (core/config.ts), and one that is not bytes either (schemas: an AttributeValue)',
  stampPut: "a PutItem given each middleware's own stamp (policy's expiry stamp and write stamp)",
};

function productSources(): Map<string, string> {
  const roots = readdirSync(ROOT, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !NOT_PRODUCT.has(e.name))
    .map((e) => resolve(ROOT, e.name));
  const files = [resolve(ROOT, 'index.ts'), ...roots.flatMap((dir) => filesUnder(dir))].filter(
    (f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.includes('/infra/run/'),
  );
  return new Map(files.map((f) => [relative(ROOT, f), readFileSync(f, 'utf8')]));
}

describe('product helpers are written once', () => {
  const sources = productSources();
  const twice = writtenTwice(sources);

  it('reads the product code (not tests or benchmarks)', () => {
    expect(sources.has('core/retry.ts')).toBe(true);
    expect(sources.has('scanner/segment-worker.ts')).toBe(true);
    expect([...sources.keys()].some((p) => /^(test|bench|node_modules)\//.test(p))).toBe(false);
  });

  it('no helper is defined at the top level of two product files: a shared one has one home', () => {
    expect(unexplained(twice, ALLOWED)).toEqual([]);
  });

  it('the allowlist names only what several files still define', () => {
    expect(Object.keys(ALLOWED).filter((name) => !twice.has(name))).toEqual([]);
  });
});
