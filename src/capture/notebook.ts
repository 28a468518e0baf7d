/**
 * Per-notebook glue: one store and one kernel session per notebook document,
 * shared by all of its views ("New View for Notebook"), and the badges and
 * toolbar status of each view, created and disposed with it.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { CellBadges } from '../badges';
import { IBadgeThresholds } from '../badges/view';
import { IHolderAnswer } from '../engine';
import { KernelComms } from './comms';
import { BlockQuery, IHelperSettings } from './protocol';
import { CaptureSession } from './session';
import { CaptureStatus } from './status';
import { SnapshotStore } from './store';

/** Everything the extension keeps for one notebook document. */
export class NotebookCapture implements IDisposable {
  constructor(options: NotebookCapture.IOptions) {
    this._options = options;
    this.store = new SnapshotStore({ maxRecords: options.maxRecords });
    this.session = new CaptureSession({
      sessionContext: options.panel.sessionContext,
      store: this.store,
      settings: options.settings,
      comms: options.comms
    });
    this.addView(options.panel);
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

  /** Badge and status a view of this notebook; disposed with the view. */
  addView(panel: NotebookPanel): void {
    if (this._views.has(panel)) {
      return;
    }
    const badges = new CellBadges({ panel, store: this.store, thresholds: this._options.thresholds });
    const status = new CaptureStatus(this.store, this._options.trans);
    panel.toolbar.insertItem(10, 'cuda-memdiff-status', status);
    this._views.set(panel, { badges, status });
  }

  /** Forget a closed view; true when it was the last one. */
  removeView(panel: NotebookPanel): boolean {
    const view = this._views.get(panel);
    if (view) {
      view.badges.dispose();
      view.status.dispose();
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
    for (const panel of [...this._views.keys()]) {
      this.removeView(panel);
    }
    this.session.dispose();
    this.store.dispose();
  }

  private readonly _options: NotebookCapture.IOptions;
  private readonly _views = new Map<NotebookPanel, { badges: CellBadges; status: CaptureStatus }>();
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
  }
}
