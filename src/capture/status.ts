/**
 * One line in the notebook toolbar that says what the kernel helper found
 * (no torch, no CUDA, an error, a replayed session), so cells need not.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { SnapshotStore } from './store';

/** The toolbar item; hidden for non-Python kernels. */
export class CaptureStatus extends Widget {
  constructor(store: SnapshotStore, trans: TranslationBundle) {
    super();
    this._store = store;
    this._trans = trans;
    this.addClass('jp-CudaMemdiffStatus');
    this.node.setAttribute('role', 'status');
    store.changed.connect(this._update, this);
    this._update();
  }

  private _update(): void {
    const { status, message, replay } = this._store.helper;
    const trans = this._trans;
    const texts: { [key: string]: string } = {
      starting: trans.__('GPU memory: connecting…'),
      'waiting-for-torch': trans.__('GPU memory: waiting for torch'),
      'waiting-for-cuda': trans.__('GPU memory: waiting for CUDA'),
      ready: replay
        ? trans.__('GPU memory: replaying a recorded session (%1)', replay)
        : trans.__('GPU memory: capturing'),
      'no-torch': trans.__('GPU memory: no torch in this kernel'),
      'no-cuda': trans.__('GPU memory: torch without CUDA'),
      'torch-too-old': trans.__('GPU memory: torch too old for allocation history'),
      'capture-off': trans.__('GPU memory: capture off'),
      error: trans.__('GPU memory: helper error'),
      'not-python': ''
    };
    let text = Object.prototype.hasOwnProperty.call(texts, status) ? texts[status] : trans.__('GPU memory: unknown status');
    const dropped = this._store.droppedCount;
    if (dropped && text) {
      text += ' ' + trans._n('(%1 oldest snapshot dropped)', '(%1 oldest snapshots dropped)', dropped);
    }
    this.node.textContent = text;
    const peaks =
      this._store.helper.peaks === 'per-cell'
        ? trans.__('Peak counters are reset before each cell, so max_memory_allocated() counts from the cell\'s start.')
        : '';
    this.node.title = [message || text, peaks].filter(Boolean).join('\n');
    this.node.dataset.cudaMemdiffStatus = status;
    this.node.dataset.cudaMemdiffInstalls = String(this._store.helper.installs ?? 0);
    this.setHidden(!text);
  }

  private readonly _store: SnapshotStore;
  private readonly _trans: TranslationBundle;
}
