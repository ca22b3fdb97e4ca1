import { eventIdSuite } from './event-ids';

eventIdSuite('scan');
