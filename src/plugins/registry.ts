/** The notebooks' captures, by view: what the side panel follows. */
import { NotebookPanel } from '@jupyterlab/notebook';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { ICaptureRegistry, INotebookCapture } from '../tokens';

/** A capture that serves every view of one notebook document. */
export interface ISharedCapture extends INotebookCapture, IDisposable {
  addView(panel: NotebookPanel): void;
  /** True when the view was the last one. */
  removeView(panel: NotebookPanel): boolean;
}

/** Holds each notebook document's capture while any of its views lives. */
export class CaptureRegistry<T extends ISharedCapture> implements ICaptureRegistry {
  captureFor(panel: NotebookPanel): T | undefined {
    return this._captures.get(panel.context);
  }

  get changed(): ISignal<this, NotebookPanel> {
    return this._changed;
  }

  /** Every capture, for settings changes. */
  all(): IterableIterator<T> {
    return this._captures.values();
  }

  /** The document's capture for a new view: the existing one, or a new one from `create`. */
  add(panel: NotebookPanel, create: () => T): T {
    let capture = this._captures.get(panel.context);
    if (capture) {
      capture.addView(panel);
    } else {
      capture = create();
      this._captures.set(panel.context, capture);
    }
    const shared = capture;
    this._changed.emit(panel);
    panel.disposed.connect(() => {
      if (shared.removeView(panel)) {
        this._captures.delete(panel.context);
        shared.dispose();
      }
      this._changed.emit(panel);
    });
    return capture;
  }

  private readonly _captures = new Map<DocumentRegistry.IContext<DocumentRegistry.IModel>, T>();
  private readonly _changed = new Signal<this, NotebookPanel>(this);
}
