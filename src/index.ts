/**
 * jupyterlab-cuda-memdiff: which notebook cell leaked GPU memory, and why.
 * One plugin per file under plugins/; this module only lists them.
 */
import { JupyterFrontEndPlugin } from '@jupyterlab/application';
import { capturePlugin } from './plugins/capture';
import { exportPlugin } from './plugins/export';
import { filesPlugin } from './plugins/files';
import { panelPlugin } from './plugins/panel';
import { ranksPlugin } from './plugins/ranks';
import { workerPlugin } from './plugins/worker';

const plugins: JupyterFrontEndPlugin<unknown>[] = [
  panelPlugin,
  capturePlugin,
  filesPlugin,
  exportPlugin,
  workerPlugin,
  ranksPlugin
];

export default plugins;
