/**
 * The capture plugin: for every notebook, inject the kernel helper, keep the
 * snapshots it pushes, and badge the cells.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { NotebookCapture } from '../capture/notebook';
import { DEFAULT_CAPTURE_SETTINGS, ICaptureSettings, readCaptureSettings } from '../capture/settings';
import { KernelComms } from '../capture/comms';
import { CaptureRegistry } from '../capture/registry';
import { ICaptureRegistry, PACKAGE_NAME, SETTINGS_ID } from '../tokens';

export const capturePlugin: JupyterFrontEndPlugin<ICaptureRegistry> = {
  id: `${PACKAGE_NAME}:capture`,
  description: 'Takes a CUDA allocator snapshot after every notebook cell and badges the cell.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry, ITranslator],
  provides: ICaptureRegistry,
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    registry: ISettingRegistry | null,
    translator: ITranslator | null
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
            comms
          })
      );
    });
    return captures;
  }
};
