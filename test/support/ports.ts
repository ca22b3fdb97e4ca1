import { connect } from 'node:net';
import { resolve } from 'node:path';

/** The repository root, whatever the cwd jest was started from. */
export const ROOT_DIR = resolve(__dirname, '..', '..');

export type StackService = 'kafka' | 'dynamodb' | 's3' | 'toxiproxy';
export const STACK_SERVICES: readonly StackService[] = ['kafka', 'dynamodb', 's3', 'toxiproxy'];

/** Same variables and defaults as infra/lib.sh, so the harness looks where the scripts start things. */
export function stackHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.TTLSTREAM_STACK_HOST ?? '127.0.0.1';
}

export function stackPort(service: StackService, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    kafka: env.TTLSTREAM_STACK_KAFKA_PORT ?? '19092',
    dynamodb: env.TTLSTREAM_STACK_DYNAMODB_PORT ?? '18000',
    s3: env.TTLSTREAM_STACK_S3_PORT ?? '19000',
    // Toxiproxy's HTTP API.
    toxiproxy: env.TTLSTREAM_STACK_TOXIPROXY_PORT ?? '18474',
  }[service];
  return parsePort(raw, service);
}

/** The services the stack's Toxiproxy has a proxy for (infra/lib.sh write_toxiproxy_config). */
export type ProxiedService = 'kafka' | 'dynamodb';

/** Where a client reaches `service` through Toxiproxy (the proxy of that name listens there). */
export function proxiedPort(service: ProxiedService, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    kafka: env.TTLSTREAM_STACK_TOXIPROXY_KAFKA_PORT ?? '19095',
    dynamodb: env.TTLSTREAM_STACK_TOXIPROXY_DYNAMODB_PORT ?? '18001',
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

/** The secured Kafka listeners of the local stack (infra/lib.sh write_kafka_config). */
export type SecuredListener = 'scram' | 'mtls' | 'oauth';

export function securedKafkaPort(listener: SecuredListener, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    scram: env.TTLSTREAM_STACK_KAFKA_SCRAM_PORT ?? '19096',
    mtls: env.TTLSTREAM_STACK_KAFKA_MTLS_PORT ?? '19097',
    oauth: env.TTLSTREAM_STACK_KAFKA_OAUTH_PORT ?? '19098',
  }[listener];
  return parsePort(raw, `kafka ${listener} listener`);
}

/** The SCRAM-SHA-512 user infra/lib.sh gives the SASL_SCRAM listener. */
export const STACK_SCRAM_USER = { username: 'ttlstream', password: 'ttlstream-secret' };
