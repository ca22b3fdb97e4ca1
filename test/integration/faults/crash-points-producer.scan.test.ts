import { crashPointSuite } from './crash-points';

crashPointSuite('scan', 'producer');
