/**
 * The capture plugin: for every notebook, inject the kernel helper, keep the
 * snapshots it pushes, badge the cells, and say in the notebook toolbar what
 * the helper found. Its settings (schema/plugin.json) are the capture's; the
 * toolbar item is declared there too, so users can move or hide it.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { NotebookCapture } from './handler';
import { DEFAULT_CAPTURE_SETTINGS, ICaptureSettings, readCaptureSettings } from './settings';
import { KernelComms } from '../capture/comms';
import { CaptureStatus } from '../capture/status';
import { CaptureRegistry } from './registry';
import { CommandIDs, ICaptureRegistry, SETTINGS_ID } from '../tokens';

/** The notebook toolbar item (schema/plugin.json's jupyter.lab.toolbars) that shows the helper's status. */
export const STATUS_TOOLBAR_ITEM = 'cuda-memdiff-status';

export const capturePlugin: JupyterFrontEndPlugin<ICaptureRegistry> = {
  // The plugin whose schema holds the capture settings it reads.
  id: SETTINGS_ID,
  description: 'Takes a CUDA allocator snapshot after every notebook cell and badges the cell.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry, ITranslator, IToolbarWidgetRegistry],
  provides: ICaptureRegistry,
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    registry: ISettingRegistry | null,
    translator: ITranslator | null,
    toolbars: IToolbarWidgetRegistry | null
  ): ICaptureRegistry => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    let settings: ICaptureSettings = DEFAULT_CAPTURE_SETTINGS;
    const captures = new CaptureRegistry<NotebookCapture>();
    const comms = new KernelComms();

    const apply = (next: ICaptureSettings) => {
      const helperChanged = JSON.stringify(next.helper) !== JSON.stringify(settings.helper);
      settings = next;
      for (const capture of captures.all()) {
        capture.thresholds = next.thresholds;
        capture.store.maxRecords = next.snapshotsKept;
        if (helperChanged) {
          void capture.session.reinstall();
        }
      }
    };
    if (registry) {
      registry
        .load(SETTINGS_ID)
        .then(loaded => {
          apply(readCaptureSettings(loaded));
          loaded.changed.connect(() => apply(readCaptureSettings(loaded)));
        })
        .catch(reason => {
          console.warn('cuda-memdiff: settings could not be loaded; using the defaults', reason);
        });
    }

    // The toolbar builds its items before the tracker announces the panel, so
    // the status item starts empty and takes the store once the capture exists.
    toolbars?.addFactory<NotebookPanel>('Notebook', STATUS_TOOLBAR_ITEM, panel => {
      const status = new CaptureStatus(trans, captures.captureFor(panel)?.store ?? null);
      const follow = (_: unknown, changed: NotebookPanel) => {
        if (changed === panel) {
          status.store = captures.captureFor(panel)?.store ?? null;
        }
      };
      captures.changed.connect(follow);
      status.disposed.connect(() => captures.changed.disconnect(follow));
      return status;
    });

    tracker.widgetAdded.connect((_, panel) => {
      // Every view of a notebook shares its capture: one kernel connection, one store.
      captures.add(
        panel,
        () =>
          new NotebookCapture({
            panel,
            settings: () => settings.helper,
            thresholds: settings.thresholds,
            maxRecords: settings.snapshotsKept,
            trans,
            comms,
            // The panel's plugin defines the command; without it (disabled), a click does nothing.
            onShow: cellId => {
              if (app.commands.hasCommand(CommandIDs.showCellDiff)) {
                void app.commands.execute(CommandIDs.showCellDiff, { cellId });
              }
            }
          })
      );
    });
    return captures;
  }
};
