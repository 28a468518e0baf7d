/**
 * One line in the notebook toolbar that says what the kernel helper found
 * (no torch, no CUDA, an error, a replayed session), so cells need not.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { IRecordingAbout } from './protocol';
import { IHelperState, SnapshotStore } from './store';

/**
 * A replayed recording as people read it: `a recorded session (NVIDIA
 * H200)` (the GPU it was recorded on, as its manifest says), or `a recorded
 * session` where it names none.
 * The folder's name is for tooltips (recordingDetail): it is how the files
 * are found, not what the session was.
 */
export function recordingName(recording: IRecordingAbout | null | undefined, trans: TranslationBundle): string {
  const device = recording?.device;
  if (!device) {
    return trans.__('a recorded session');
  }
  const count = recording?.device_count ?? 1;
  return count > 1
    ? trans.__('a recorded session (%1 × %2)', count, device)
    : trans.__('a recorded session (%1)', device);
}

/** Where a replayed recording comes from, for a tooltip: its notebook and its folder. */
export function recordingDetail(
  recording: IRecordingAbout | null | undefined,
  folder: string,
  trans: TranslationBundle
): string {
  return recording?.scenario
    ? trans.__('Recording: %1 (folder %2)', recording.scenario, folder)
    : trans.__('Recording: folder %1', folder);
}

/** What the status reads of a notebook's snapshots. */
export type StatusSource = Pick<SnapshotStore, 'helper' | 'droppedCount' | 'changed'>;

/** The toolbar item; hidden for non-Python kernels and until its notebook's capture exists. */
export class CaptureStatus extends Widget {
  constructor(trans: TranslationBundle, store: StatusSource | null = null) {
    super();
    this._trans = trans;
    this.addClass('jp-CudaMemdiffStatus');
    this.node.setAttribute('role', 'status');
    // The text in a block of its own: a toolbar item is a flex box, whose bare text an ellipsis cannot cut.
    this._text.className = 'jp-CudaMemdiffStatus-text';
    this.node.appendChild(this._text);
    this.store = store;
    if (!store) {
      this._update(); // the setter saw no change: hide until a store comes
    }
  }

  /** The snapshots whose helper state it shows; the toolbar item exists before the capture does. */
  get store(): StatusSource | null {
    return this._store;
  }
  set store(store: StatusSource | null) {
    if (store === this._store || this.isDisposed) {
      return;
    }
    this._store?.changed.disconnect(this._update, this);
    this._store = store;
    store?.changed.connect(this._update, this);
    this._update();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.store = null;
    super.dispose();
  }

  private _update(): void {
    const store = this._store;
    if (!store) {
      this._text.textContent = '';
      this.setHidden(true);
      return;
    }
    const { status, message } = store.helper;
    const trans = this._trans;
    let text = Private.statusText(store.helper, trans);
    const dropped = store.droppedCount;
    if (dropped && text) {
      text = trans._n('%2 (%1 oldest snapshot dropped)', '%2 (%1 oldest snapshots dropped)', dropped, text);
    }
    this._text.textContent = text;
    const peaks =
      store.helper.peaks === 'per-cell'
        ? trans.__("Peak counters are reset before each cell, so max_memory_allocated() counts from the cell's start.")
        : '';
    const replay = store.helper.replay;
    const recording = replay ? recordingDetail(store.helper.recording, replay, trans) : '';
    this.node.title = [message || text, recording, peaks].filter(Boolean).join('\n');
    this.node.dataset.cudaMemdiffStatus = status;
    this.node.dataset.cudaMemdiffInstalls = String(store.helper.installs ?? 0);
    this.setHidden(!text);
  }

  private _store: StatusSource | null = null;
  private readonly _text = document.createElement('span');
  private readonly _trans: TranslationBundle;
}

/** A namespace for module-private functions. */
namespace Private {
  /**
   * The line for a helper state. A status the kernel sends is looked up in a
   * Map, never as an object key, so `constructor` or `__proto__` is just unknown.
   */
  export function statusText(helper: IHelperState, trans: TranslationBundle): string {
    // Typed by every status the protocol defines: a new one in protocol.py fails the build until it is worded.
    const texts: Record<IHelperState['status'], string> = {
      starting: trans.__('GPU memory: connecting…'),
      'waiting-for-torch': trans.__('GPU memory: waiting for torch'),
      'waiting-for-cuda': trans.__('GPU memory: waiting for CUDA'),
      ready: helper.replay
        ? trans.__('GPU memory: replaying %1', recordingName(helper.recording, trans))
        : trans.__('GPU memory: capturing'),
      'no-cuda': trans.__('GPU memory: torch without CUDA'),
      'torch-too-old': trans.__('GPU memory: torch too old for allocation history'),
      'capture-off': trans.__('GPU memory: capture off'),
      error: trans.__('GPU memory: helper error'),
      'not-python': ''
    };
    return new Map<string, string>(Object.entries(texts)).get(helper.status) ?? trans.__('GPU memory: unknown status');
  }
}
