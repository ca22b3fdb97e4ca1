import { crashPointSuite } from './crash-points.support';

crashPointSuite('scan', 'producer');
