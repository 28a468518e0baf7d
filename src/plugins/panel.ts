/**
 * The panel plugin: adds the side panel, restores it across reloads and
 * registers the command that opens it.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { MemdiffPanel } from '../panel';
import { memoryIcon } from '../panel/icon';
import { CommandIDs, PACKAGE_NAME } from '../tokens';

/** Rank among right-side panels: after the debugger and property inspector. */
const PANEL_RANK = 900;

export const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: `${PACKAGE_NAME}:plugin`,
  description: 'The CUDA memory diff side panel and the command that opens it.',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    const panel = new MemdiffPanel({ translator: translator ?? nullTranslator });
    app.shell.add(panel, 'right', { rank: PANEL_RANK });
    restorer?.add(panel, panel.id);

    app.commands.addCommand(CommandIDs.openPanel, {
      label: trans.__('Open CUDA Memory Diff Panel'),
      caption: trans.__('Show GPU memory snapshots and diffs per notebook cell'),
      icon: memoryIcon,
      execute: () => {
        app.shell.activateById(panel.id);
      }
    });
    palette?.addItem({ command: CommandIDs.openPanel, category: trans.__('CUDA Memory') });
  }
};
