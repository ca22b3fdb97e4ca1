// Readiness probe for the local stack, used by infra/*.sh. A service is ready only when a real
// request succeeds (not merely when its port accepts connections): Kafka answers a metadata
// request, the DynamoDB API answers ListTables, S3 answers ListBuckets, Toxiproxy lists its
// proxies and both of the stack's (kafka, dynamodb) are among them, the schema registry says it is
// ready (/health/ready: its storage answers) and lists its subjects over the Confluent-compatible API, moto's DynamoDB
// answers ListTables and its DynamoDB Streams ListStreams.
//
//   node infra/probe.mjs <kafka|dynamodb|s3|toxiproxy|registry|moto> <endpoint> [--timeout-ms N] [--pid N] [--brokers N]
//
// The registry's endpoint is its Confluent-compatible base URL (http://host:port/apis/ccompat/v7). Kafka's may list
// several brokers (comma-separated); --brokers N: ready only once the cluster's metadata names N brokers (infra/cluster.sh).
//
// Exit codes: 0 ready, 1 not ready within the timeout, 2 the watched process (--pid) died, 64 usage.
/* global console, AbortSignal, fetch, URL */
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

const [service, endpoint, ...rest] = process.argv.slice(2);
const opts = {};
for (let i = 0; i < rest.length; i += 2) opts[rest[i]] = rest[i + 1];
const timeoutMs = Number(opts['--timeout-ms'] ?? 0);
const pid = opts['--pid'] ? Number(opts['--pid']) : undefined;
const brokers = Number(opts['--brokers'] ?? 1);

const SERVICES = ['kafka', 'dynamodb', 's3', 'toxiproxy', 'registry', 'moto'];
if (!service || !endpoint || !SERVICES.includes(service) || !Number.isFinite(timeoutMs) || !(brokers >= 1)) {
  console.error(
    `usage: node infra/probe.mjs <${SERVICES.join('|')}> <endpoint> [--timeout-ms N] [--pid N] [--brokers N]`,
  );
  process.exit(64);
}

const credentials = { accessKeyId: 'local', secretAccessKey: 'localsecret' };

async function makeProbe() {
  if (service === 'kafka') {
    const { default: kafkajs } = await import('kafkajs');
    const kafka = new kafkajs.Kafka({
      clientId: 'ttlstream-probe',
      brokers: endpoint.split(','),
      connectionTimeout: 1000,
      requestTimeout: 3000,
      retry: { retries: 0 },
      logLevel: kafkajs.logLevel.NOTHING,
    });
    return async () => {
      const admin = kafka.admin();
      try {
        await admin.connect();
        const cluster = await admin.describeCluster();
        if (cluster.brokers.length < brokers || cluster.controller === null)
          throw new Error(
            `${cluster.brokers.length} of ${brokers} broker(s) and controller ${cluster.controller}`,
          );
        await admin.listTopics();
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    };
  }
  if (service === 'toxiproxy') {
    return async () => {
      const res = await fetch(`${endpoint}/proxies`, { signal: AbortSignal.timeout(3000) });
      if (!res.ok) throw new Error(`GET /proxies: HTTP ${res.status}`);
      const proxies = await res.json();
      const missing = ['kafka', 'dynamodb'].filter((name) => !(name in proxies));
      if (missing.length > 0) throw new Error(`proxies ${missing.join(', ')} missing`);
    };
  }
  if (service === 'registry') {
    return async () => {
      const health = await fetch(`${new URL(endpoint).origin}/health/ready`, {
        signal: AbortSignal.timeout(3000),
      });
      if (!health.ok) throw new Error(`GET /health/ready: HTTP ${health.status}`);
      const subjects = await fetch(`${endpoint}/subjects`, { signal: AbortSignal.timeout(3000) });
      if (!subjects.ok) throw new Error(`GET ${endpoint}/subjects: HTTP ${subjects.status}`);
      if (!Array.isArray(await subjects.json())) throw new Error(`GET ${endpoint}/subjects: not a list`);
    };
  }
  if (service === 'moto') {
    const { DynamoDBClient, ListTablesCommand } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBStreamsClient, ListStreamsCommand } = await import('@aws-sdk/client-dynamodb-streams');
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
    const streams = new DynamoDBStreamsClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
    return async () => {
      await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(3000) });
      await streams.send(new ListStreamsCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(3000) });
    };
  }
  if (service === 'dynamodb') {
    const { DynamoDBClient, ListTablesCommand } = await import('@aws-sdk/client-dynamodb');
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
    return async () => {
      await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(3000) });
    };
  }
  const { S3Client, ListBucketsCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    credentials,
    forcePathStyle: true,
    maxAttempts: 1,
  });
  return async () => {
    await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(3000) });
  };
}

function alive(p) {
  try {
    process.kill(p, 0);
    return true;
  } catch {
    return false;
  }
}

const probe = await makeProbe();
const deadline = Date.now() + timeoutMs;
let lastError = 'no attempt';
for (;;) {
  try {
    await probe();
    process.exit(0);
  } catch (err) {
    lastError = err instanceof Error ? err.message : String(err);
  }
  if (pid !== undefined && !alive(pid)) {
    console.error(`${service}: process ${pid} exited before it became ready (last error: ${lastError})`);
    process.exit(2);
  }
  if (Date.now() >= deadline) {
    if (timeoutMs > 0)
      console.error(`${service}: not ready at ${endpoint} after ${timeoutMs} ms (last error: ${lastError})`);
    process.exit(1);
  }
  await sleep(250);
}
