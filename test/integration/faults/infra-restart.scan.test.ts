import { serviceRestartSuite } from './infra-restart.support';

serviceRestartSuite('scan');
