/**
 * Per-notebook glue: one store and one kernel session per notebook document,
 * shared by all of its views ("New View for Notebook"), and the badges of
 * each view, created and disposed with it. (The toolbar status is a toolbar
 * item the capture plugin declares; it finds the store through the registry.)
 */
import { Cell, isCodeCellModel } from '@jupyterlab/cells';
import { Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { CellBadges } from '../badges';
import { IBadgeThresholds } from '../badges/view';
import { IHolderAnswer } from '../engine';
import { KernelComms } from '../capture/comms';
import { BlockQuery, IHelperSettings } from '../capture/protocol';
import { CaptureSession } from '../capture/session';
import { SnapshotStore } from '../capture/store';

/** Everything the extension keeps for one notebook document. */
export class NotebookCapture implements IDisposable {
  constructor(options: NotebookCapture.IOptions) {
    this._options = options;
    this._document = options.panel.context.model;
    this.store = new SnapshotStore({ maxRecords: options.maxRecords });
    this.session = new CaptureSession({
      sessionContext: options.panel.sessionContext,
      store: this.store,
      settings: options.settings,
      comms: options.comms
    });
    this.addView(options.panel);
    // Runs of this document's cells from any view: the helper goes ahead of a cell sent before it is in, and a
    // cell that has run in a new kernel stops showing the old one's figures.
    NotebookActions.executionScheduled.connect(this._onScheduled, this);
    NotebookActions.executed.connect(this._onExecuted, this);
  }

  readonly store: SnapshotStore;
  readonly session: CaptureSession;

  /** Thresholds that colour every view's badges. */
  set thresholds(value: IBadgeThresholds) {
    this._options.thresholds = value;
    for (const view of this._views.values()) {
      view.badges.thresholds = value;
      view.badges.update();
    }
  }

  /** Badge a view of this notebook; disposed with the view. */
  addView(panel: NotebookPanel): void {
    if (this._views.has(panel)) {
      return;
    }
    const badges = new CellBadges({
      panel,
      store: this.store,
      thresholds: this._options.thresholds,
      trans: this._options.trans,
      onShow: this._options.onShow
    });
    this._views.set(panel, { badges });
  }

  /** Forget a closed view; true when it was the last one. */
  removeView(panel: NotebookPanel): boolean {
    const view = this._views.get(panel);
    if (view) {
      view.badges.dispose();
      this._views.delete(panel);
    }
    return this._views.size === 0;
  }

  /** Ask the kernel who holds these blocks. */
  requestHolders(blocks: readonly BlockQuery[]): Promise<IHolderAnswer> {
    return this.session.requestHolders(blocks);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    NotebookActions.executionScheduled.disconnect(this._onScheduled, this);
    NotebookActions.executed.disconnect(this._onExecuted, this);
    for (const panel of [...this._views.keys()]) {
      this.removeView(panel);
    }
    this.session.dispose();
    this.store.dispose();
  }

  private _onScheduled(_: unknown, args: { notebook: Notebook; cell: Cell }): void {
    if (args.cell.model.type === 'code' && args.notebook.model === this._document) {
      this.session.cellScheduled(); // before the cell's request: right after a restart, the helper goes first
    }
  }

  /**
   * A cell's run ended (its reply came). Not when it was scheduled: Run All
   * after a restart schedules every cell at once, and each waiting cell keeps
   * its earlier kernel's badge, dimmed, until its own run is over; by then the
   * helper's snapshot or note for it has come (the helper sends it before the
   * kernel replies). A cell the kernel never ran (aborted after an error
   * above it) has no execution count and keeps its dimmed badge too.
   */
  private _onExecuted(_: unknown, args: { notebook: Notebook; cell: Cell }): void {
    const model = args.cell.model;
    if (isCodeCellModel(model) && args.notebook.model === this._document && model.executionCount !== null) {
      this.store.cellRan(model.id);
    }
  }

  private readonly _options: NotebookCapture.IOptions;
  // The notebook document every view shows (the first view may close before the others).
  private readonly _document: NotebookPanel['context']['model'];
  private readonly _views = new Map<NotebookPanel, { badges: CellBadges }>();
  private _isDisposed = false;
}

/** A namespace for NotebookCapture statics. */
export namespace NotebookCapture {
  export interface IOptions {
    /** The first view of the notebook. */
    panel: NotebookPanel;
    settings: () => IHelperSettings;
    thresholds: IBadgeThresholds;
    maxRecords: number;
    trans: TranslationBundle;
    comms: KernelComms;
    /** A badge's click: show that cell's diff (see CellBadges.IOptions.onShow). */
    onShow?: (cellId: string) => void;
  }
}
