import { crashPointSuite } from './crash-points';

crashPointSuite('index', 'scanner');
