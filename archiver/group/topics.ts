import type { TopicsSettings } from '../../core/config';

/** The topic names that tell a stream topic: `topics.shared`, `topics.perTablePrefix`, `topics.deadLetter`. */
export type StreamTopics = Pick<TopicsSettings, 'shared' | 'perTablePrefix' | 'deadLetter'>;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Stream topics the archiver reads: the shared topic and every per-table topic, never the dead-letter topic. */
export function streamTopicFilter(topics: StreamTopics): (topic: string) => boolean {
  const perTable = new RegExp(`^${escapeRegExp(topics.perTablePrefix)}`);
  return (topic) => topic !== topics.deadLetter && (topic === topics.shared || perTable.test(topic));
}
