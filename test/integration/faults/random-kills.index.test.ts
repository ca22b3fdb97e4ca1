import { randomKillSuite } from './random-kills';

randomKillSuite('index');
