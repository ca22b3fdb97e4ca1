import { connect } from 'node:net';
import { resolve } from 'node:path';

/** The repository root, whatever the cwd jest was started from. */
export const ROOT_DIR = resolve(__dirname, '..', '..');

export type StackService = 'kafka' | 'dynamodb' | 's3' | 'toxiproxy' | 'registry' | 'moto';
export const STACK_SERVICES: readonly StackService[] = [
  'kafka',
  'dynamodb',
  's3',
  'toxiproxy',
  'registry',
  'moto',
];

// One place decides how many stacks a run uses (and jest.config.js its workers): test/jest/stacks.cjs.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const stacks = require('../jest/stacks.cjs') as {
  testStacks(env?: NodeJS.ProcessEnv): number;
  firstTestLane(env?: NodeJS.ProcessEnv): number;
  testLane(index: number, env?: NodeJS.ProcessEnv): number;
};

/** How many stacks an integration run uses, one per jest worker (`TTLSTREAM_TEST_STACKS`). */
export const testStacks: (env?: NodeJS.ProcessEnv) => number = stacks.testStacks;

/**
 * Which of several side-by-side stacks (infra/lib.sh TTLSTREAM_STACK_LANE): lane N shifts every default port by
 * 100 × N and keeps its data and endpoints file apart. integration-env.ts gives each jest worker a lane of its own.
 */
export function stackLane(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TTLSTREAM_STACK_LANE ?? '0';
  if (!/^[0-9]$/.test(raw))
    throw new Error(`TTLSTREAM_STACK_LANE=${raw}: expected a lane number from 0 to 9`);
  return Number(raw);
}

/** The lane of jest worker 1 (`TTLSTREAM_TEST_FIRST_LANE`, default 0); test/jest/stacks.cjs. */
export function firstTestLane(env: NodeJS.ProcessEnv = process.env): number {
  return stacks.firstTestLane(env);
}

/** The lane of the `index`-th stack of a test run (0-based: jest worker index + 1), at most 9; test/jest/stacks.cjs. */
export function testLane(index: number, env: NodeJS.ProcessEnv = process.env): number {
  return stacks.testLane(index, env);
}

function lanePort(port: number, env: NodeJS.ProcessEnv): string {
  return String(port + 100 * stackLane(env));
}

/** Same variables and defaults as infra/lib.sh, so the harness looks where the scripts start things. */
export function stackHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.TTLSTREAM_STACK_HOST ?? '127.0.0.1';
}

export function stackPort(service: StackService, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    kafka: env.TTLSTREAM_STACK_KAFKA_PORT ?? lanePort(19092, env),
    dynamodb: env.TTLSTREAM_STACK_DYNAMODB_PORT ?? lanePort(18000, env),
    s3: env.TTLSTREAM_STACK_S3_PORT ?? lanePort(19000, env),
    // Toxiproxy's HTTP API.
    toxiproxy: env.TTLSTREAM_STACK_TOXIPROXY_PORT ?? lanePort(18474, env),
    // Apicurio Registry (its HTTP port; registryUrl() is what a client is given).
    registry: env.TTLSTREAM_STACK_REGISTRY_PORT ?? lanePort(18081, env),
    // moto's server: a second DynamoDB-API implementation, with DynamoDB Streams (motoEndpoint()).
    moto: env.TTLSTREAM_STACK_MOTO_PORT ?? lanePort(18002, env),
  }[service];
  return parsePort(raw, service);
}

/**
 * The base URL of the stack's Confluent-compatible schema registry (Apicurio Registry's `/apis/ccompat/v7`), as a
 * Confluent schema-registry client takes it; endpoints.json `registry.url` (infra/lib.sh service_endpoint).
 */
export function registryUrl(env: NodeJS.ProcessEnv = process.env): string {
  return `http://${stackHost(env)}:${stackPort('registry', env)}/apis/ccompat/v7`;
}

/** moto's DynamoDB and DynamoDB Streams endpoint (endpoints.json `moto.endpoint`, infra/lib.sh service_endpoint). */
export function motoEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return `http://${stackHost(env)}:${stackPort('moto', env)}`;
}

/** The services the stack's Toxiproxy has a proxy for (infra/lib.sh write_toxiproxy_config). */
export type ProxiedService = 'kafka' | 'dynamodb';

/** Where a client reaches `service` through Toxiproxy (the proxy of that name listens there). */
export function proxiedPort(service: ProxiedService, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    kafka: env.TTLSTREAM_STACK_TOXIPROXY_KAFKA_PORT ?? lanePort(19095, env),
    dynamodb: env.TTLSTREAM_STACK_TOXIPROXY_DYNAMODB_PORT ?? lanePort(18001, env),
  }[service];
  return parsePort(raw, `${service} through toxiproxy`);
}

function parsePort(raw: string, what: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`bad port "${raw}" for ${what}`);
  return port;
}

export function portOpen(port: number, host = stackHost(), timeoutMs = 1000): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ port, host });
    const finish = (open: boolean): void => {
      socket.destroy();
      done(open);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

export function runDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.TTLSTREAM_STACK_RUN_DIR ?? resolve(ROOT_DIR, 'infra', 'run');
}

/**
 * The Python of the registry consumers' venv (infra/lib.sh ensure_consumers_venv: confluent-kafka with its Avro and
 * schema-registry support, infra/consumers-requirements.txt), shared by the lanes; prepared with the registry.
 */
export function consumersPython(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(runDir(env), 'venv-consumers', 'bin', 'python');
}

/** What one stack owns (logs, data, locks): the run dir itself for lane 0, its `lane-N` folder otherwise. */
export function stackDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const lane = stackLane(env);
  return lane === 0 ? runDir(env) : resolve(runDir(env), `lane-${lane}`);
}

/** The folder of the stack's endpoints.json (infra/lib.sh STATE_DIR). */
export function stackStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const lane = stackLane(env);
  const base = resolve(ROOT_DIR, env.TTLSTREAM_STATE_DIR ?? '.ttlstream');
  return lane === 0 || env.TTLSTREAM_STATE_DIR !== undefined ? base : resolve(base, `lane-${lane}`);
}

/** The secured Kafka listeners of the local stack (infra/lib.sh write_kafka_config). */
export type SecuredListener = 'scram' | 'mtls' | 'oauth';

export function securedKafkaPort(listener: SecuredListener, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    scram: env.TTLSTREAM_STACK_KAFKA_SCRAM_PORT ?? lanePort(19096, env),
    mtls: env.TTLSTREAM_STACK_KAFKA_MTLS_PORT ?? lanePort(19097, env),
    oauth: env.TTLSTREAM_STACK_KAFKA_OAUTH_PORT ?? lanePort(19098, env),
  }[listener];
  return parsePort(raw, `kafka ${listener} listener`);
}

/** The SCRAM-SHA-512 user infra/lib.sh gives the SASL_SCRAM listener. */
export const STACK_SCRAM_USER = { username: 'ttlstream', password: 'ttlstream-secret' };
