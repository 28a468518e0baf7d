/**
 * The snapshot diff side panel: a JupyterLab SidePanel whose body is React,
 * following the notebook its model is given.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel } from '@lumino/widgets';
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
    this.model = options.model ?? new DiffPanelModel();
    this.id = PANEL_ID;
    this.addClass('jp-CudaMemdiffPanel');
    this.title.icon = memoryIcon;
    this.title.caption = trans.__('CUDA Memory');
    this.node.setAttribute('aria-label', trans.__('CUDA Memory'));
    this.leaks = new LeakFinderModel(this.model, options.worker);
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
  }

  /** What the panel shows. */
  readonly model: DiffPanelModel;

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

  private readonly _filesDropped = new Signal<this, readonly File[]>(this);
}

/** A namespace for MemdiffPanel statics. */
export namespace MemdiffPanel {
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
