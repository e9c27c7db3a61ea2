import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from './shell';

window.addEventListener('hashchange', render);
render();
