/**
 * The files plugin: registers the snapshot file type (.pickle, .pkl, and
 * their .gz forms) and the "CUDA Memory Snapshot" viewer that opens them
 * into the diff panel.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SnapshotFileFactory } from '../files';
import { memoryIcon } from '../panel/icon';
import { IDiffPanel, PACKAGE_NAME, SNAPSHOT_FILE_TYPE } from '../tokens';

export const FACTORY_NAME = 'CUDA Memory Snapshot';

export const filesPlugin: JupyterFrontEndPlugin<void> = {
  id: `${PACKAGE_NAME}:files`,
  description: 'Opens snapshot pickles from torch.cuda.memory._dump_snapshot() in the diff panel.',
  autoStart: true,
  requires: [IDiffPanel],
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, panel: IDiffPanel, translator: ITranslator | null) => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    app.docRegistry.addFileType({
      name: SNAPSHOT_FILE_TYPE,
      displayName: trans.__('CUDA memory snapshot'),
      extensions: ['.pickle', '.pkl', '.pickle.gz', '.pkl.gz'],
      mimeTypes: ['application/octet-stream'],
      fileFormat: 'base64',
      contentType: 'file',
      icon: memoryIcon
    });
    app.docRegistry.addWidgetFactory(
      new SnapshotFileFactory({
        name: FACTORY_NAME,
        label: trans.__('CUDA Memory Snapshot'),
        modelName: 'base64',
        fileTypes: [SNAPSHOT_FILE_TYPE],
        // Double-click in the file browser opens snapshots here: the text
        // editor, the fallback, cannot read a binary pickle.
        defaultFor: [SNAPSHOT_FILE_TYPE],
        readOnly: true,
        panel,
        trans
      })
    );
  }
};
