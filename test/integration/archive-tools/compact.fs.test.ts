import { compactSuites } from './compact-suites.support';

compactSuites('fs');
