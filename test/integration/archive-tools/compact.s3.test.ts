import { compactSuites } from './compact-suites.support';

compactSuites('s3');
