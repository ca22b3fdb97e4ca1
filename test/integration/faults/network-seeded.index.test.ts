import { networkFaultSuite } from './network';

networkFaultSuite('index', 'seeded');
