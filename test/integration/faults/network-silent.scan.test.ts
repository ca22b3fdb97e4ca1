import { networkFaultSuite } from './network';

networkFaultSuite('scan', 'silent');
