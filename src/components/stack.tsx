/**
 * A stack trace as a person reads it. Frames that belong to notebook cells
 * read `Cell [5], line 3` followed by that source line, and open the cell when
 * clicked. Every string from a snapshot is rendered as text, never as markup.
 */
import * as React from 'react';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import {
  CellCodeNames,
  cellTag,
  Frame,
  FrameTable,
  ICellSite,
  ICellSource,
  IFrameFilterOptions,
  visibleStack
} from '../engine';

/** Where a frame points in the notebook. */
export interface ICellLocation {
  cell: ICellSource;
  line: number;
}

/** The labels (`Cell [5]`, `Cell [5], line 3`; see cellTag) and the source line of a frame inside a notebook cell. */
export function cellFrameLabel(
  cell: ICellSource,
  line: number | null,
  trans: TranslationBundle = nullTranslator.load('jupyterlab_cuda_memdiff')
): { cellLabel: string; label: string; sourceLine: string } {
  const tag = cellTag(cell);
  return {
    cellLabel: trans.__('Cell %1', tag),
    label: trans.__('Cell %1, line %2', tag, line ?? '?'),
    sourceLine: line === null ? '' : (cell.source.split('\n')[line - 1]?.trim() ?? '')
  };
}

/**
 * The cells one frame stands for, named and joined by "or": copies of one
 * cell share its code name, so the frame cannot tell which of them ran.
 * `part` picks `Cell [5], line 3` (label) or `Cell [5]` (cellLabel).
 */
export function copiesText(
  copies: readonly ICellSource[],
  line: number | null,
  trans: TranslationBundle,
  part: 'label' | 'cellLabel' = 'label'
): string {
  return copies.map(c => cellFrameLabel(c, line, trans)[part]).join(` ${trans.__('or')} `);
}

/** A run of C++ frames shown as one line of a stack. */
export function nativeFramesText(count: number, trans: TranslationBundle): string {
  return trans._n('[%1 C++ frame]', '[%1 C++ frames]', count);
}

/**
 * A frame in one line of text, as the panel names it everywhere: `Cell [5],
 * line 3` for a notebook cell's frame (each cell with that code, see
 * copiesText), else `name (file:line)`.
 */
export function frameText(frame: Frame, cells: CellCodeNames, trans: TranslationBundle): string {
  const match = cells.lookup(frame.filename);
  return match ? copiesText(match.cells, frame.line, trans) : `${frame.name} (${frame.filename}:${frame.line})`;
}

/**
 * An allocation site in one line of text: `Cell [4], line 3` (each copy of
 * the cell, see copiesText), `train_step (Cell [1], line 7)` for a function a
 * cell defined, `file.py:12` outside the notebook.
 */
export function siteText(site: ICellSite, trans: TranslationBundle): string {
  if (site.cell) {
    const place = copiesText(site.sameSource ?? [site.cell], site.line, trans);
    return site.function ? trans.__('%1 (%2)', site.function, place) : place;
  }
  return site.line === null ? trans.__('no Python stack') : `${site.filename.split('/').pop()}:${site.line}`;
}

/** Props of StackView. */
export interface IStackViewProps {
  frames: FrameTable;
  stack: number;
  filter: IFrameFilterOptions;
  cells: CellCodeNames;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
}

/** The frames of one stack, innermost first. */
export function StackView(props: IStackViewProps): JSX.Element {
  const { frames, stack, filter, cells, trans, onReveal } = props;
  const entries = visibleStack(frames, stack, filter);
  if (!entries.length) {
    return (
      <p className="jp-CudaMemdiffStack-none">
        {trans.__("No Python stack (allocated outside Python code, e.g. by autograd's backward thread).")}
      </p>
    );
  }
  return (
    <ol className="jp-CudaMemdiffStack" aria-label={trans.__('Allocation stack, innermost frame first')}>
      {entries.map((entry, i) => {
        if (entry.kind === 'native') {
          return (
            <li key={i} className="jp-CudaMemdiffStack-native">
              {nativeFramesText(entry.count, trans)}
            </li>
          );
        }
        const frame = frames.frame(entry.frameId);
        const match = cells.lookup(frame.filename);
        if (match) {
          return (
            <li key={i} className="jp-CudaMemdiffStack-cell">
              {match.cells.map((cell, k) => {
                const { label, sourceLine } = cellFrameLabel(cell, frame.line, trans);
                return (
                  <span key={cell.id}>
                    {k > 0 ? ` ${trans.__('or')} ` : ''}
                    <button
                      className="jp-CudaMemdiffStack-link"
                      data-cuda-memdiff-cell-id={cell.id}
                      title={trans.__('Go to this line of the cell')}
                      onClick={() => onReveal({ cell, line: frame.line })}
                    >
                      {label}
                    </button>
                    {k === match.cells.length - 1 ? (
                      <code className="jp-CudaMemdiffStack-source">{sourceLine}</code>
                    ) : null}
                  </span>
                );
              })}
              {match.ambiguous ? (
                <span className="jp-CudaMemdiffStack-note">{trans.__(' (cells with identical source)')}</span>
              ) : null}
            </li>
          );
        }
        return (
          <li key={i} className="jp-CudaMemdiffStack-frame">
            <span className="jp-CudaMemdiffStack-name">{frame.name}</span>{' '}
            <span className="jp-CudaMemdiffStack-file">
              {frame.filename}:{frame.line}
            </span>
          </li>
        );
      })}
    </ol>
  );
}
