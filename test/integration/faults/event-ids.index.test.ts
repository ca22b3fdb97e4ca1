import { eventIdSuite } from './event-ids.support';

eventIdSuite('index');
