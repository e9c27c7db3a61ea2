import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from './views';

window.addEventListener('hashchange', render);
render();
