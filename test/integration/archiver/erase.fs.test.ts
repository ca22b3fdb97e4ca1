import { eraseSuites } from './erase-suites.support';

eraseSuites(['fs'], true);
