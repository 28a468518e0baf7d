/**
 * The panel before it has anything to compare: what it will show, why the
 * followed notebook gives it nothing where its kernel says why (torch without
 * CUDA, capture off, not Python), and the files it opens instead.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { IHelperState } from '../capture/store';

/** The empty panel; `status` is the followed notebook's helper's (undefined: no notebook followed). */
export function EmptyState(props: { status?: IHelperState['status']; trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-CudaMemdiffPanel-empty" role="status">
      <p className="jp-CudaMemdiffPanel-emptyTitle">{trans.__('No GPU memory snapshots yet')}</p>
      <p>{whyNone(props.status, trans)}</p>
      <p>
        {trans
          .__('Or drop snapshot files written by %1 here, or double-click them in the file browser.', '\u0000')
          .split('\u0000')
          .map((part, i) => (
            <React.Fragment key={i}>
              {i ? <DottedName name="torch.cuda.memory._dump_snapshot()" /> : null}
              {part}
            </React.Fragment>
          ))}
      </p>
    </div>
  );
}

/** What the followed notebook's kernel says of its snapshots, or how a notebook gets them. */
function whyNone(status: IHelperState['status'] | undefined, trans: TranslationBundle): string {
  switch (status) {
    case 'no-cuda':
      return trans.__(
        "This notebook's kernel has torch without CUDA (a CPU build, or no GPU it can see): it has no GPU memory to snapshot."
      );
    case 'capture-off':
      return trans.__(
        'GPU memory capture is off in the settings (Settings Editor, CUDA Memory): turn it on for a snapshot after each cell.'
      );
    case 'not-python':
      return trans.__("This notebook's kernel is not Python: snapshots come from Python kernels that use PyTorch.");
    default:
      return trans.__(
        'Run cells of a notebook whose kernel uses PyTorch with CUDA: each cell will get a snapshot of the CUDA caching allocator, and this panel will compare them.'
      );
  }
}

/**
 * A dotted Python name as code that a narrow panel wraps after a dot, never
 * inside a part (`_dump_snaps` / `hot()` reads as two names).
 */
export function DottedName(props: { name: string }): JSX.Element {
  const parts = props.name.split('.');
  return (
    <code className="jp-CudaMemdiffDottedName">
      {parts.map((part, i) => (
        <React.Fragment key={i}>
          {i ? (
            <>
              .<wbr />
            </>
          ) : null}
          {part}
        </React.Fragment>
      ))}
    </code>
  );
}
