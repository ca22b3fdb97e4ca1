import { randomKillSuite } from './random-kills.support';

randomKillSuite('index');
