import { serviceRestartSuite } from './infra-restart';

serviceRestartSuite('scan');
