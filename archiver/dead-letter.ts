import type { IHeaders, Producer } from 'kafkajs';
import { DLQ_HEADERS, REPLAY_HEADER } from '../schemas/headers';

// The header names are part of the stream contract (schemas/headers.ts); the archiver's modules take them from here.
export { DLQ_HEADERS, REPLAY_HEADER };

export interface PoisonMessage {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders | undefined;
  timestamp: string;
}

/** The dead-letter message: original key, value, timestamp and headers, plus where it came from and why. */
export function deadLetterMessage(
  poison: PoisonMessage,
  reason: string,
): { key: Buffer | null; value: Buffer | null; headers: IHeaders; timestamp: string } {
  // An original header of the same name must not be able to pass for ours.
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(poison.headers ?? {})) {
    if (!(Object.values(DLQ_HEADERS) as string[]).includes(name) && value !== undefined)
      headers[name] = value;
  }
  headers[DLQ_HEADERS.reason] = reason;
  headers[DLQ_HEADERS.topic] = poison.topic;
  headers[DLQ_HEADERS.partition] = String(poison.partition);
  headers[DLQ_HEADERS.offset] = poison.offset;
  return { key: poison.key, value: poison.value, headers, timestamp: poison.timestamp };
}

/** Publish one poison message to the dead-letter topic; resolves once all in-sync replicas have it. */
export async function sendToDeadLetter(
  producer: Producer,
  topic: string,
  poison: PoisonMessage,
  reason: string,
): Promise<void> {
  await producer.send({ topic, acks: -1, messages: [deadLetterMessage(poison, reason)] });
}

/** True when the message carries `ttlstream-replay: 1`. */
export function isReplayed(headers: IHeaders | undefined): boolean {
  const raw = headers?.[REPLAY_HEADER];
  if (raw === undefined) return false;
  const values = Array.isArray(raw) ? raw : [raw];
  return values.some((v) => v !== undefined && v.toString() === '1');
}
