/**
 * Snapshot files in the main area: "Open With > CUDA Memory Snapshot" on a
 * pickle from torch.cuda.memory._dump_snapshot() shows its totals per device
 * and hands it to the diff panel, where it can be compared with other files
 * or with the notebook's snapshots.
 */
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { formatBytes, readSnapshot, SnapshotError } from '../engine';
import { IDiffPanel } from '../tokens';

/** Bytes of a base64 document model. */
function decodeBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/\s+/g, ''));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = binary.charCodeAt(i);
  }
  return bytes;
}

/** The main-area view of one snapshot file. */
export class SnapshotFileView extends Widget {
  constructor(context: DocumentRegistry.IContext<DocumentRegistry.IModel>, panel: IDiffPanel, trans: TranslationBundle) {
    super();
    this.addClass('jp-CudaMemdiffFile');
    void context.ready.then(() => {
      if (this.isDisposed) {
        return;
      }
      this._show(context.path, decodeBase64(context.model.toString()), panel, trans);
    });
  }

  private _show(path: string, bytes: Uint8Array, panel: IDiffPanel, trans: TranslationBundle): void {
    const node = this.node;
    const name = path.split('/').pop() ?? path;
    const heading = document.createElement('h2');
    heading.textContent = name;
    heading.title = path;
    node.appendChild(heading);
    let totals;
    try {
      totals = readSnapshot(bytes).totals;
    } catch (reason) {
      const error = document.createElement('p');
      error.setAttribute('role', 'alert');
      error.className = 'jp-CudaMemdiffFile-error';
      error.textContent = trans.__(
        'Not a readable CUDA memory snapshot: %1',
        reason instanceof SnapshotError ? reason.message : String(reason)
      );
      node.appendChild(error);
      return;
    }
    const table = document.createElement('table');
    table.className = 'jp-CudaMemdiffFile-totals';
    const headers = [trans.__('Device'), trans.__('Allocated'), trans.__('Reserved'), trans.__('Free in segments'), trans.__('Largest free'), trans.__('Blocks')];
    const head = table.createTHead().insertRow();
    for (const h of headers) {
      const th = document.createElement('th');
      th.textContent = h;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const t of totals) {
      const row = body.insertRow();
      for (const value of [`cuda:${t.device}`, formatBytes(t.allocatedBytes), formatBytes(t.reservedBytes), formatBytes(t.inactiveBytes), formatBytes(t.largestFreeBytes), String(t.allocatedBlocks)]) {
        row.insertCell().textContent = value;
      }
    }
    node.appendChild(table);
    const note = document.createElement('p');
    note.textContent = trans.__('The CUDA Memory panel now holds this snapshot: pick it there to compare it with other files or with a notebook\'s cells.');
    node.appendChild(note);
    panel.addFile(name, bytes, path);
    panel.reveal();
  }
}

/** Creates SnapshotFileView documents for the snapshot file type. */
export class SnapshotFileFactory extends ABCWidgetFactory<DocumentWidget<SnapshotFileView>> {
  constructor(options: SnapshotFileFactory.IOptions) {
    super(options);
    this._panel = options.panel;
    this._trans = options.trans;
  }

  protected createNewWidget(context: DocumentRegistry.IContext<DocumentRegistry.IModel>): DocumentWidget<SnapshotFileView> {
    return new DocumentWidget({ context, content: new SnapshotFileView(context, this._panel, this._trans) });
  }

  private readonly _panel: IDiffPanel;
  private readonly _trans: TranslationBundle;
}

/** A namespace for SnapshotFileFactory statics. */
export namespace SnapshotFileFactory {
  export interface IOptions extends DocumentRegistry.IWidgetFactoryOptions<DocumentWidget<SnapshotFileView>> {
    panel: IDiffPanel;
    trans: TranslationBundle;
  }
}
