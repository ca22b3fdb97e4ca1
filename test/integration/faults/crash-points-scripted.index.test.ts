import { crashPointSuite } from './crash-points.support';

crashPointSuite('index', 'scripted');
