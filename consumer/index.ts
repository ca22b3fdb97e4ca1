/** A typed consumer of ttlstream's REMOVE stream, for teams that act on TTL deletions. */
export {
  consumeTtlStream,
  DEFAULT_STREAM_TOPIC,
  type ConsumeTtlStreamOptions,
  type TtlStreamConsumer,
  type RecordMeta,
  type PoisonMeta,
} from './consume';
export { DedupeWindow } from './dedupe-window';
export {
  PoisonRecordError,
  isTtlDelete,
  type PoisonReason,
  type Retraction,
  type StreamRecord,
  type AttributeMap,
  type AttributeValue,
} from '../schemas';
