import { randomKillSuite } from './random-kills';

randomKillSuite('scan');
