/**
 * The files plugin: registers the snapshot file type (.pickle, .pkl, and
 * their .gz forms) and the "CUDA Memory Snapshot" viewer that opens them
 * into the diff panel. (Files dropped on the panel take the same road, wired
 * by the panel plugin, so dropping works without this plugin.)
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SnapshotBytesModelFactory, SnapshotFileFactory } from '../files';
import { memoryIcon } from '../panel/icon';
import { IDiffPanel, IEngineWorker, PACKAGE_NAME, SNAPSHOT_FILE_TYPE } from '../tokens';

export const FACTORY_NAME = 'CUDA Memory Snapshot';

export const filesPlugin: JupyterFrontEndPlugin<void> = {
  id: `${PACKAGE_NAME}:files`,
  description: 'Opens snapshot pickles from torch.cuda.memory._dump_snapshot() in the diff panel.',
  autoStart: true,
  requires: [IDiffPanel, IEngineWorker],
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, panel: IDiffPanel, worker: IEngineWorker, translator: ITranslator | null) => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    // The view reads bytes from the raw file endpoint; the document loads no content.
    app.docRegistry.addModelFactory(new SnapshotBytesModelFactory());
    app.docRegistry.addFileType({
      name: SNAPSHOT_FILE_TYPE,
      displayName: trans.__('CUDA memory snapshot'),
      extensions: ['.pickle', '.pkl', '.pickle.gz', '.pkl.gz'],
      mimeTypes: ['application/octet-stream'],
      fileFormat: null,
      contentType: 'file',
      icon: memoryIcon
    });
    app.docRegistry.addWidgetFactory(
      new SnapshotFileFactory({
        name: FACTORY_NAME,
        label: trans.__('CUDA Memory Snapshot'),
        modelName: SnapshotBytesModelFactory.modelName,
        fileTypes: [SNAPSHOT_FILE_TYPE],
        // Double-click in the file browser opens snapshots here: the text
        // editor, the fallback, cannot read a binary pickle.
        defaultFor: [SNAPSHOT_FILE_TYPE],
        readOnly: true,
        view: { panel, worker, serverSettings: app.serviceManager.serverSettings, trans }
      })
    );
  }
};
