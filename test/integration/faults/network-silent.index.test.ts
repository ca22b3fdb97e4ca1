import { networkFaultSuite } from './network.support';

networkFaultSuite('index', 'silent');
