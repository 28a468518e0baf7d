/**
 * The ranks plugin: opens a multi-rank session (docs/ranks-format.md) from
 * its ranks.json in the main area, parsed in the engine worker.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { memoryIcon } from '../panel/icon';
import { RanksWidget } from '../ranks/widget';
import { IEngineWorker, PACKAGE_NAME } from '../tokens';

export const RANKS_FILE_TYPE = 'cuda-memdiff-ranks';
export const RANKS_FACTORY = 'CUDA Memory Ranks';

class RanksFactory extends ABCWidgetFactory<DocumentWidget<RanksWidget>> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<DocumentWidget<RanksWidget>>,
    private readonly _app: JupyterFrontEnd,
    private readonly _engine: IEngineWorker,
    private readonly _trans: TranslationBundle
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<RanksWidget> {
    const content = new RanksWidget(context.path, this._app.serviceManager.contents, this._engine, this._trans);
    const widget = new DocumentWidget({ content, context });
    widget.title.icon = memoryIcon;
    return widget;
  }
}

export const ranksPlugin: JupyterFrontEndPlugin<void> = {
  id: `${PACKAGE_NAME}:ranks`,
  description: 'Opens multi-rank GPU memory sessions (ranks.json) and compares the ranks.',
  autoStart: true,
  requires: [IEngineWorker],
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, engine: IEngineWorker, translator: ITranslator | null) => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    app.docRegistry.addFileType({
      name: RANKS_FILE_TYPE,
      displayName: trans.__('GPU memory of several ranks'),
      // Only the index the ranks capture writes; other JSON files stay JSON.
      pattern: '^ranks\\.json$',
      extensions: [],
      mimeTypes: ['application/json'],
      fileFormat: 'text',
      contentType: 'file',
      icon: memoryIcon
    });
    app.docRegistry.addWidgetFactory(
      new RanksFactory(
        {
          name: RANKS_FACTORY,
          label: trans.__('CUDA Memory Ranks'),
          fileTypes: [RANKS_FILE_TYPE],
          defaultFor: [RANKS_FILE_TYPE],
          readOnly: true
        },
        app,
        engine,
        trans
      )
    );
  }
};
