import { networkFaultSuite } from './network';

networkFaultSuite('scan', 'seeded');
