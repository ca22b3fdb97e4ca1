import { eraseSuites } from './erase-suites';

eraseSuites(['fs'], true);
