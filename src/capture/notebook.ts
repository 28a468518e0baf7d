/**
 * Per-notebook glue: a store, the kernel session, the badges and the toolbar
 * status of one notebook panel, created and disposed together.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { CellBadges } from '../badges';
import { IBadgeThresholds } from '../badges/view';
import { IHolderAnswer } from '../engine';
import { BlockQuery, IHelperSettings } from './protocol';
import { CaptureSession } from './session';
import { CaptureStatus } from './status';
import { SnapshotStore } from './store';

/** Everything the extension keeps for one notebook. */
export class NotebookCapture implements IDisposable {
  constructor(options: NotebookCapture.IOptions) {
    this.store = new SnapshotStore({ maxRecords: options.maxRecords });
    this.session = new CaptureSession({
      sessionContext: options.panel.sessionContext,
      store: this.store,
      settings: options.settings
    });
    this.badges = new CellBadges({ panel: options.panel, store: this.store, thresholds: options.thresholds });
    this._status = new CaptureStatus(this.store, options.trans);
    options.panel.toolbar.insertItem(10, 'cuda-memdiff-status', this._status);
  }

  readonly store: SnapshotStore;
  readonly session: CaptureSession;
  readonly badges: CellBadges;

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
    this.badges.dispose();
    this.session.dispose();
    this._status.dispose();
    this.store.dispose();
  }

  private readonly _status: CaptureStatus;
  private _isDisposed = false;
}

/** A namespace for NotebookCapture statics. */
export namespace NotebookCapture {
  export interface IOptions {
    panel: NotebookPanel;
    settings: () => IHelperSettings;
    thresholds: IBadgeThresholds;
    maxRecords: number;
    trans: TranslationBundle;
  }
}
