import { networkFaultSuite } from './network.support';

networkFaultSuite('scan', 'silent');
