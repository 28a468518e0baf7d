/** The notebooks' captures, by panel: what the side panel follows. */
import { NotebookPanel } from '@jupyterlab/notebook';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { ICaptureRegistry, INotebookCapture } from '../tokens';

/** Holds each notebook panel's capture while the panel lives. */
export class CaptureRegistry<T extends INotebookCapture & IDisposable> implements ICaptureRegistry {
  captureFor(panel: NotebookPanel): T | undefined {
    return this._captures.get(panel);
  }

  get changed(): ISignal<this, NotebookPanel> {
    return this._changed;
  }

  /** Every capture, for settings changes. */
  all(): IterableIterator<T> {
    return this._captures.values();
  }

  /** Keep a panel's capture until the panel is disposed, then dispose it. */
  add(panel: NotebookPanel, capture: T): void {
    this._captures.set(panel, capture);
    this._changed.emit(panel);
    panel.disposed.connect(() => {
      this._captures.delete(panel);
      capture.dispose();
      this._changed.emit(panel);
    });
  }

  private readonly _captures = new Map<NotebookPanel, T>();
  private readonly _changed = new Signal<this, NotebookPanel>(this);
}
