import { connect } from 'node:net';
import { resolve } from 'node:path';

/** The repository root, whatever the cwd jest was started from. */
export const ROOT_DIR = resolve(__dirname, '..', '..');

export type StackService = 'kafka' | 'dynamodb' | 's3';
export const STACK_SERVICES: readonly StackService[] = ['kafka', 'dynamodb', 's3'];

/** Same variables and defaults as infra/lib.sh, so the harness looks where the scripts start things. */
export function stackHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.TTLSTREAM_STACK_HOST ?? '127.0.0.1';
}

export function stackPort(service: StackService, env: NodeJS.ProcessEnv = process.env): number {
  const raw = {
    kafka: env.TTLSTREAM_STACK_KAFKA_PORT ?? '19092',
    dynamodb: env.TTLSTREAM_STACK_DYNAMODB_PORT ?? '18000',
    s3: env.TTLSTREAM_STACK_S3_PORT ?? '19000',
  }[service];
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`bad port "${raw}" for ${service}`);
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
