/**
 * A snapshot file's out-of-memory post-mortem in the panel, above the diff
 * that shows the file: the drawing the file's own view opens on
 * (oomDetails), so a file dropped on the panel reads as an opened one.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { CellCodeNames } from '../engine';
import { oomDetails } from '../components/oomview';
import type { IFileOom } from '../worker/files';

/** Props of FileOomBody. */
export interface IFileOomBodyProps {
  oom: IFileOom;
  /** Names the holders' frames as the panel names them. */
  cells: CellCodeNames;
  trans: TranslationBundle;
}

/** The post-mortem's words, figures and holders, redrawn when the file or the cells' names change. */
export function FileOomBody(props: IFileOomBodyProps): JSX.Element {
  const { oom, cells, trans } = props;
  const host = React.useRef<HTMLDivElement>(null);
  // Before paint: the section never shows empty when the panel scrolls to it.
  React.useLayoutEffect(() => {
    host.current?.replaceChildren(...oomDetails(oom, cells, trans));
  }, [oom, cells, trans]);
  return <div ref={host} className="jp-CudaMemdiffMoment" />;
}
