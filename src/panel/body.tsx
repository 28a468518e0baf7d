/**
 * The panel's React body. It has nothing to show until snapshots arrive
 * (capture comes with the kernel helper), so it explains how to get them.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

/** Props of the panel body. */
export interface IPanelBodyProps {
  trans: TranslationBundle;
}

/** The empty state: what the panel will show and how to fill it. */
export function PanelBody(props: IPanelBodyProps): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-CudaMemdiffPanel-empty" role="status">
      <p className="jp-CudaMemdiffPanel-emptyTitle">{trans.__('No GPU memory snapshots yet')}</p>
      <p>
        {trans.__(
          'Run cells of a notebook whose kernel uses PyTorch with CUDA: each cell will get a snapshot of the CUDA caching allocator, and this panel will compare them.'
        )}
      </p>
    </div>
  );
}
