import { eraseSuites } from './erase-suites.support';

eraseSuites(['s3'], false);
