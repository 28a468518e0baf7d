/** The panel's icon: a memory chip, drawn with JupyterLab's icon colour classes. */
import { LabIcon } from '@jupyterlab/ui-components';

const MEMORY_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16">
  <g class="jp-icon3" fill="#616161">
    <path d="M6 5h12a1 1 0 0 1 1 1v12a1 1 0 0 1-1 1H6a1 1 0 0 1-1-1V6a1 1 0 0 1 1-1zm1 2v10h10V7H7zm2 2h6v6H9V9z"/>
    <path d="M8 2h2v3H8zM14 2h2v3h-2zM8 19h2v3H8zM14 19h2v3h-2zM2 8h3v2H2zM2 14h3v2H2zM19 8h3v2h-3zM19 14h3v2h-3z"/>
  </g>
</svg>`;

/** Icon of the CUDA Memory panel. */
export const memoryIcon = new LabIcon({ name: 'jupyterlab-cuda-memdiff:memory', svgstr: MEMORY_SVG });

const LEAK_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16">
  <g class="jp-icon3" fill="#616161">
    <path d="M5 4h10a1 1 0 0 1 1 1v5h-2V6H6v8h4v2H5a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1z"/>
    <path d="M16.5 11a4.5 4.5 0 0 1 3.6 7.2l2.6 2.6-1.4 1.4-2.6-2.6a4.5 4.5 0 1 1-2.2-8.6zm0 2a2.5 2.5 0 1 0 0 5 2.5 2.5 0 0 0 0-5z"/>
  </g>
</svg>`;

/** Icon of "Find leaking cell": a chip under a magnifier. */
export const leakIcon = new LabIcon({ name: 'jupyterlab-cuda-memdiff:leak', svgstr: LEAK_SVG });
