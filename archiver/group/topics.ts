import type { TtlstreamConfig } from '../../core/config';

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Stream topics the archiver reads: the shared topic and every per-table topic, never the dead-letter topic. */
export function streamTopicFilter(config: TtlstreamConfig): (topic: string) => boolean {
  const perTable = new RegExp(`^${escapeRegExp(config.topics.perTablePrefix)}`);
  return (topic) =>
    topic !== config.topics.deadLetter && (topic === config.topics.shared || perTable.test(topic));
}
