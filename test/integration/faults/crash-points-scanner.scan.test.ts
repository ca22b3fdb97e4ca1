import { crashPointCoverage, crashPointSuite } from './crash-points.support';

crashPointCoverage();
crashPointSuite('scan', 'scanner');
