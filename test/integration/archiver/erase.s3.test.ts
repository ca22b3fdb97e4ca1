import { eraseSuites } from './erase-suites';

eraseSuites(['s3'], false);
