/**
 * Snapshot files in the main area: "Open With > CUDA Memory Snapshot" on a
 * pickle from torch.cuda.memory._dump_snapshot() has the engine worker
 * stream its bytes from the server and parse them once, shows its totals per device
 * and, when it carries trace entries, its allocation timeline, and hands the
 * parsed snapshot to the diff panel, where it can be compared with other
 * files or with the notebook's snapshots. Closing the view frees the worker's
 * copy; the panel's copy goes when the file is closed there. Files dropped on
 * the panel take the same road (open.ts).
 */
import { ABCWidgetFactory, Base64ModelFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { Contents, ServerConnection } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';
import { DOMUtils } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import { DeviceTotals, formatBytes, formatCount } from '../engine';
import { IDiffPanel, IEngineWorker } from '../tokens';
import { unreadableReason } from '../components/unreadable';
import { fetchInWorker, handToPanel, nextFileId } from './open';
import { fileRequest } from './request';
import { fileStatusText } from './words';
import { oomSection } from '../components/oomview';
import { renderTimeline, TIMELINE_WIDTH } from './timelineview';

/**
 * A document model that loads no content: the view reads the file's bytes
 * itself from the raw file endpoint, so the contents API never puts a large
 * pickle into one base64 string.
 */
export class SnapshotBytesModelFactory extends Base64ModelFactory {
  /** The model name the snapshot factory asks for. */
  static readonly modelName = 'cuda-memdiff-bytes';

  get name(): string {
    return SnapshotBytesModelFactory.modelName;
  }

  get fileFormat(): Contents.FileFormat {
    return null;
  }
}

/** The main-area view of one snapshot file. */
export class SnapshotFileView extends Widget {
  constructor(context: DocumentRegistry.IContext<DocumentRegistry.IModel>, options: SnapshotFileView.IOptions) {
    super();
    this.addClass('jp-CudaMemdiffFile');
    this._options = options;
    const name = context.path.split('/').pop() ?? context.path;
    const heading = document.createElement('h2');
    heading.textContent = name;
    heading.title = context.path;
    // A region named by its file: a screen reader says which view it entered, not "main area content".
    heading.id = DOMUtils.createDomID();
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-labelledby', heading.id);
    this.node.appendChild(heading);
    this._status = document.createElement('p');
    this._status.className = 'jp-CudaMemdiffFile-status';
    this._status.setAttribute('role', 'status');
    this.node.appendChild(this._status);
    void context.ready.then(() => (this.isDisposed ? undefined : this._open(context.path, name)));
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._removeTimeline?.();
    if (this._started) {
      // The worker stops reading, or drops its parsed copy (and the trace): closing the view frees it.
      void this._options.worker.call('closeSnapshotFile', { id: this._id });
    }
    super.dispose();
  }

  private async _open(path: string, name: string): Promise<void> {
    const { trans, worker, panel } = this._options;
    let opened;
    try {
      const request = await fileRequest(path, this._options.serverSettings);
      if (this.isDisposed) {
        return;
      }
      this._started = true;
      opened = await fetchInWorker(worker, request, { id: this._id, width: TIMELINE_WIDTH }, p => {
        if (this.isDisposed) {
          return;
        }
        this._status.textContent =
          p.phase === 'parsing'
            ? trans.__('Parsing %1 in the background…', formatBytes(p.read))
            : p.total === null
              ? trans.__('Reading %1…', formatBytes(p.read))
              : trans.__('Reading %1 of %2…', formatBytes(p.read), formatBytes(p.total));
      });
    } catch (reason) {
      if (this.isDisposed) {
        return;
      }
      this._status.textContent = '';
      const error = document.createElement('p');
      error.setAttribute('role', 'alert');
      error.className = 'jp-CudaMemdiffFile-error';
      error.textContent = trans.__('Cannot read this file: %1', unreadableReason(reason));
      this.node.appendChild(error);
      return;
    }
    if (this.isDisposed) {
      void worker.call('closeSnapshotFile', { id: this._id });
      return;
    }
    this._status.textContent = fileStatusText(opened.snapshot.totals, opened.traceEntries, trans);
    if (opened.oom) {
      // What a person opens an OOM dump for comes first.
      this.node.appendChild(oomSection(opened.oom, panel.cellNames(), trans));
    }
    this.node.appendChild(totalsTable(opened.snapshot.totals, trans));
    if (opened.timeline) {
      const id = this._id;
      this._removeTimeline = renderTimeline(
        this.node,
        opened.timeline,
        {
          describe: moment => worker.call('describeMoment', { id, moment }),
          diff: (from, to) => worker.call('diffMoments', { id, from, to }),
          cells: () => panel.cellNames()
        },
        trans
      );
    }
    const note = document.createElement('p');
    note.textContent = trans.__(
      "The CUDA Memory panel now holds this snapshot: pick it there to compare it with other files or with a notebook's cells."
    );
    this.node.appendChild(note);
    // Then the diff panel takes the file, after the first picture is painted.
    await new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));
    if (!this.isDisposed) {
      await handToPanel(panel, name, opened, path, () => !this.isDisposed);
    }
  }

  private readonly _options: SnapshotFileView.IOptions;
  private readonly _id = nextFileId();
  private readonly _status: HTMLElement;
  /** Whether the worker was asked to open the file (so it must be told when the view closes). */
  private _started = false;
  private _removeTimeline: (() => void) | null = null;
}

/** A namespace for SnapshotFileView statics. */
export namespace SnapshotFileView {
  export interface IOptions {
    panel: IDiffPanel;
    worker: IEngineWorker;
    serverSettings: ServerConnection.ISettings;
    trans: TranslationBundle;
  }
}

function totalsTable(totals: readonly DeviceTotals[], trans: TranslationBundle): HTMLTableElement {
  const table = document.createElement('table');
  table.className = 'jp-CudaMemdiffFile-totals';
  const headers = [
    trans.__('Device'),
    trans.__('Allocated'),
    trans.__('Reserved'),
    trans.__('Free in segments'),
    trans.__('Largest free'),
    trans.__('Blocks')
  ];
  const head = table.createTHead().insertRow();
  for (const h of headers) {
    const th = document.createElement('th');
    th.textContent = h;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const t of totals) {
    const row = body.insertRow();
    for (const value of [
      `cuda:${t.device}`,
      formatBytes(t.allocatedBytes),
      formatBytes(t.reservedBytes),
      formatBytes(t.inactiveBytes),
      formatBytes(t.largestFreeBytes),
      formatCount(t.allocatedBlocks)
    ]) {
      row.insertCell().textContent = value;
    }
  }
  return table;
}

/** Creates SnapshotFileView documents for the snapshot file type. */
export class SnapshotFileFactory extends ABCWidgetFactory<DocumentWidget<SnapshotFileView>> {
  constructor(options: SnapshotFileFactory.IOptions) {
    super(options);
    this._view = options.view;
  }

  protected createNewWidget(
    context: DocumentRegistry.IContext<DocumentRegistry.IModel>
  ): DocumentWidget<SnapshotFileView> {
    return new DocumentWidget({ context, content: new SnapshotFileView(context, this._view) });
  }

  private readonly _view: SnapshotFileView.IOptions;
}

/** A namespace for SnapshotFileFactory statics. */
export namespace SnapshotFileFactory {
  export interface IOptions extends DocumentRegistry.IWidgetFactoryOptions<DocumentWidget<SnapshotFileView>> {
    view: SnapshotFileView.IOptions;
  }
}
