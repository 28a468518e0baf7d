/**
 * The export plugin: writes a notebook's snapshots as a session folder
 * (docs/session-format.md) next to the notebook, and the panel's snapshot as
 * a pickle that torch.cuda._memory_viz and pytorch.org/memory_viz open.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { exportCells } from '../capture/export';
import { sessionFolderFiles, snapshotToPickle } from '../engine';
import { freePath } from '../files/freeName';
import { CommandIDs, ICaptureRegistry, IDiffPanel, PACKAGE_NAME } from '../tokens';

/** Base64 of bytes, in chunks small enough for String.fromCharCode. */
function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export const exportPlugin: JupyterFrontEndPlugin<void> = {
  id: `${PACKAGE_NAME}:export`,
  description: 'Exports GPU memory snapshots as session folders and pickles.',
  autoStart: true,
  requires: [INotebookTracker, ICaptureRegistry, IDiffPanel],
  optional: [ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    captures: ICaptureRegistry,
    panel: IDiffPanel,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_cuda_memdiff');
    const contents = app.serviceManager.contents;
    const save = (path: string, bytes: Uint8Array) =>
      contents.save(path, { type: 'file', format: 'base64', content: toBase64(bytes) });

    app.commands.addCommand(CommandIDs.exportSession, {
      label: trans.__('Export CUDA Memory Session'),
      caption: trans.__("Write the notebook's snapshots as a session folder the cuda-memdiff CLI reads"),
      isEnabled: () => !!tracker.currentWidget && !!captures.captureFor(tracker.currentWidget)?.store.records.length,
      execute: async () => {
        const notebook = tracker.currentWidget;
        const store = notebook ? captures.captureFor(notebook)?.store : undefined;
        if (!notebook || !store) {
          return;
        }
        const cells = Array.from(notebook.content.model?.cells ?? []).map(c => ({
          id: c.id,
          source: c.sharedModel.getSource()
        }));
        // The kernel's answers about who held the blocks (the leak finder's), so `leaks` gives the panel's verdicts.
        const exported = exportCells(
          store.records,
          cells,
          r => store.holdersOf(r),
          r => store.blockRolesOf(r)
        );
        const folder = await freePath(
          contents,
          PathExt.join(
            PathExt.dirname(notebook.context.path),
            `${PathExt.basename(notebook.context.path, '.ipynb')}-cuda-memdiff-session`
          )
        );
        await contents.save(folder, { type: 'directory' });
        const files = sessionFolderFiles(exported, { notebook: notebook.context.path });
        for (const [name, bytes] of files) {
          await save(PathExt.join(folder, name), bytes);
        }
        Notification.success(trans.__('GPU memory session written to %1 (%2 snapshots)', folder, exported.length), {
          autoClose: 5000
        });
        return folder;
      }
    });

    app.commands.addCommand(CommandIDs.saveSnapshot, {
      label: trans.__('Save CUDA Memory Snapshot as Pickle'),
      caption: trans.__(
        "Save the cell's snapshot the panel shows, for torch.cuda._memory_viz and pytorch.org/memory_viz (a file the panel shows is on disk already)"
      ),
      isEnabled: () => panel.shownSnapshot() !== null,
      execute: async () => {
        const shown = panel.shownSnapshot();
        if (!shown) {
          return;
        }
        const dir = tracker.currentWidget ? PathExt.dirname(tracker.currentWidget.context.path) : '';
        // Plain, as torch's _dump_snapshot writes it: torch.cuda._memory_viz reads no gzip.
        const path = await freePath(contents, PathExt.join(dir, shown.name), '.pickle');
        await save(path, snapshotToPickle(shown.snapshot, false));
        Notification.success(trans.__('Snapshot saved to %1', path), { autoClose: 5000 });
        return path;
      }
    });

    for (const command of [CommandIDs.exportSession, CommandIDs.saveSnapshot]) {
      palette?.addItem({ command, category: trans.__('CUDA Memory') });
    }
  }
};
