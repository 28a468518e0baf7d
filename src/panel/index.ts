/**
 * The snapshot diff side panel: a JupyterLab SidePanel whose body is React,
 * following the notebook its model is given.
 */
import { DOMUtils, ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';
import * as React from 'react';
import { IEngineWorker, PANEL_ID } from '../tokens';
import { PanelBody } from './body';
import { SectionBoundary } from '../components/section';
import { memoryIcon } from './icon';
import { LeakFinderModel } from '../leaks/model';
import { DiffPanelModel } from './model';
import { ICellLocation } from '../components/stack';

/** The side panel with the session chart and the diff. */
export class MemdiffPanel extends SidePanel {
  constructor(options: MemdiffPanel.IOptions = {}) {
    const translator = options.translator ?? nullTranslator;
    // A plain panel, not the default accordion: the body is one widget with
    // its own sections, and an accordion would add an empty, collapsible
    // title bar above it.
    super({ translator, content: new Panel() });
    const trans = translator.load('jupyterlab_cuda_memdiff');
    this.model = options.model ?? new DiffPanelModel({ trans });
    this.id = PANEL_ID;
    this.addClass('jp-CudaMemdiffPanel');
    this.title.icon = memoryIcon;
    this.title.caption = trans.__('CUDA Memory');
    // A heading as JupyterLab's own side panels have one (an h2 in the
    // SidePanel header, above the toolbar and outside what scrolls, so it
    // never meets the sections' sticky headings), then the notebook the
    // panel follows. The panel is a region named by its heading.
    const heading = document.createElement('h2');
    heading.id = DOMUtils.createDomID();
    heading.className = 'jp-CudaMemdiffPanel-heading';
    heading.textContent = trans.__('CUDA Memory');
    this.header.addWidget(new Widget({ node: heading }));
    this._notebookName.addClass('jp-CudaMemdiffPanel-notebook');
    this._notebookName.addClass('jp-text-truncated');
    this.header.addWidget(this._notebookName);
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-labelledby', heading.id);
    this.leaks = new LeakFinderModel(this.model, options.worker, trans);
    const onReveal = options.onReveal ?? (() => undefined);
    const onShowCell = options.onShowCell ?? (() => undefined);
    const onDropFiles = (files: readonly File[]) => this._filesDropped.emit(files);
    const body = ReactWidget.create(
      React.createElement(
        SectionBoundary,
        { trans },
        React.createElement(PanelBody, {
          model: this.model,
          leaks: this.leaks,
          trans,
          onReveal,
          onShowCell,
          onDropFiles
        })
      )
    );
    body.addClass('jp-CudaMemdiffPanel-body');
    this.addWidget(body);
    this.model.changed.connect(this._showNotebookName, this);
    this._showNotebookName();
  }

  /** What the panel shows. */
  readonly model: DiffPanelModel;

  /**
   * Give the keyboard to what the panel shows (its Open command from the
   * palette; before, the keyboard stayed in the notebook, tabs away from the
   * panel just opened), unless it is in the panel already. Other ways of
   * showing the panel (a toolbar button, a file opened, Find Leaking Cell)
   * leave the focus where it is.
   */
  focusContent(): void {
    // A frame later: the command palette, once its command ran, gives the focus back to where it was (the
    // notebook); and opened for the first time, the panel's body is drawn by React a few frames later.
    const focus = (frames: number) => {
      if (this.isDisposed) {
        return;
      }
      const content = this.node.querySelector<HTMLElement>('.jp-CudaMemdiffPanel-content');
      if (!content) {
        if (frames > 0) {
          requestAnimationFrame(() => focus(frames - 1));
        }
      } else if (this.isVisible && !this.node.contains(document.activeElement)) {
        content.focus();
      }
    };
    requestAnimationFrame(() => focus(MemdiffPanel.FOCUS_FRAMES));
  }

  /** The leak finder's state for the notebook the panel follows. */
  readonly leaks: LeakFinderModel;

  /** Files the user dropped on the panel (the panel plugin opens them through the engine worker). */
  get filesDropped(): ISignal<this, readonly File[]> {
    return this._filesDropped;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.leaks.dispose();
    this.model.dispose();
    Signal.clearData(this);
    super.dispose();
  }

  /** Name the followed notebook in the header (hidden when the panel follows none). */
  private _showNotebookName(): void {
    const name = this.model.notebook?.title ?? '';
    const node = this._notebookName.node;
    if (node.textContent !== name) {
      node.textContent = name;
      node.title = name;
    }
    this._notebookName.setHidden(!name);
  }

  private readonly _filesDropped = new Signal<this, readonly File[]>(this);
  private readonly _notebookName = new Widget({ node: document.createElement('span') });
}

/** A namespace for MemdiffPanel statics. */
export namespace MemdiffPanel {
  /** Frames focusContent waits at most for a body not drawn yet. */
  export const FOCUS_FRAMES = 30;

  /** Options to create the panel. */
  export interface IOptions {
    translator?: ITranslator;
    model?: DiffPanelModel;
    /** Open a notebook cell at a line (a stack frame was clicked). */
    onReveal?: (location: ICellLocation) => void;
    /** Scroll to and highlight a cell the leak finder lists. */
    onShowCell?: (cellId: string) => void;
    /** Where the leak finder ranks (the engine worker); in-process when absent. */
    worker?: IEngineWorker;
  }
}
