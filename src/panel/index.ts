/**
 * The snapshot diff side panel: a JupyterLab SidePanel whose body is React.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import * as React from 'react';
import { PANEL_ID } from '../tokens';
import { PanelBody } from './body';
import { memoryIcon } from './icon';

/** The side panel that will hold the session chart and the diff. */
export class MemdiffPanel extends SidePanel {
  constructor(options: MemdiffPanel.IOptions = {}) {
    const translator = options.translator ?? nullTranslator;
    super({ translator });
    const trans = translator.load('jupyterlab_cuda_memdiff');
    this.id = PANEL_ID;
    this.addClass('jp-CudaMemdiffPanel');
    this.title.icon = memoryIcon;
    this.title.caption = trans.__('CUDA memory diff');
    this.node.setAttribute('aria-label', trans.__('CUDA memory diff'));
    const body = ReactWidget.create(React.createElement(PanelBody, { trans }));
    body.addClass('jp-CudaMemdiffPanel-body');
    this.addWidget(body);
  }
}

/** A namespace for MemdiffPanel statics. */
export namespace MemdiffPanel {
  /** Options to create the panel. */
  export interface IOptions {
    translator?: ITranslator;
  }
}
