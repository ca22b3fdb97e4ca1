import { crashPointCoverage, crashPointSuite } from './crash-points';

crashPointCoverage();
crashPointSuite('scan', 'scanner');
