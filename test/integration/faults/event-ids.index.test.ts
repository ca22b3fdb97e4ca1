import { eventIdSuite } from './event-ids';

eventIdSuite('index');
