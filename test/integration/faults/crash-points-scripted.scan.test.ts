import { crashPointSuite } from './crash-points.support';

crashPointSuite('scan', 'scripted');
