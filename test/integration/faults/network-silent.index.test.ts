import { networkFaultSuite } from './network';

networkFaultSuite('index', 'silent');
