import { serviceRestartSuite } from './infra-restart';

serviceRestartSuite('index');
