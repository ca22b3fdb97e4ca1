import { serviceRestartSuite } from './infra-restart.support';

serviceRestartSuite('index');
