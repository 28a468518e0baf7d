/**
 * A stack trace as a person reads it. Frames that belong to notebook cells
 * read `Cell [5], line 3` followed by that source line, and open the cell when
 * clicked; a frame of a run the cell was edited after reads `Cell [5], line 3
 * (since edited)`, shows the line as it ran, and opens the cell where that
 * code is now. A frame of a run of a cell deleted since reads `A deleted cell
 * [5], line 3` with the line as it ran, and is no link: there is no cell to
 * open. Every string from a snapshot is rendered as text, never as markup.
 */
import * as React from 'react';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import {
  CellCodeNames,
  cellLine,
  Frame,
  FrameTable,
  ICellSite,
  ICellSource,
  IFrameFilterOptions,
  visibleStack
} from '../engine';
import { cellNameText, cellTagText } from './runNames';

/** Where a frame points in the notebook. */
export interface ICellLocation {
  cell: ICellSource;
  /** The line to put the cursor on, in the cell as it reads now; null for the cell alone. */
  line: number | null;
}

/** The words of a frame inside a notebook cell (see cellFrameLabel). */
export interface ICellFrameWords {
  /** `Cell [5]` (see cellTag), or `A deleted cell [5]`. */
  readonly cellLabel: string;
  /**
   * `Cell [5], line 3`, `Cell [5], line 3 (since edited)` where the cell changed after the run, or `A deleted
   * cell [5], line 3` where it is no longer in the notebook.
   */
  readonly label: string;
  /** The line as the run ran it. */
  readonly sourceLine: string;
  /** What a click on the frame does, and for an edited or deleted cell what the line was. */
  readonly title: string;
  /** Where a click puts the cursor: the code's line in the cell now, null for the cell alone. */
  readonly lineNow: number | null;
  /** True where the cell was deleted: there is nothing to go to, so the frame is no link. */
  readonly deleted: boolean;
}

/** The words of a frame inside a notebook cell, from the engine's facts (cellLine). */
export function cellFrameLabel(
  cell: ICellSource,
  line: number | null,
  trans: TranslationBundle = nullTranslator.load('jupyterlab_cuda_memdiff')
): ICellFrameWords {
  const tag = cellTagText(cell, trans);
  const facts = cellLine(cell, line);
  if (facts.deleted) {
    return {
      cellLabel: cellNameText(tag, true, trans),
      label: trans.__('A deleted cell %1, line %2', tag, line ?? '?'),
      sourceLine: facts.textAsRun,
      title:
        line === null
          ? trans.__('The cell was deleted after this run: there is no cell to go to.')
          : trans.__(
              'The cell was deleted after this run: there is no cell to go to. Its line %1 read: %2',
              line,
              facts.textAsRun
            ),
      lineNow: null,
      deleted: true
    };
  }
  if (!facts.edited) {
    return {
      cellLabel: cellNameText(tag, false, trans),
      label: trans.__('Cell %1, line %2', tag, line ?? '?'),
      sourceLine: facts.textAsRun,
      title: trans.__('Go to this line of the cell'),
      lineNow: facts.lineNow,
      deleted: false
    };
  }
  return {
    cellLabel: cellNameText(tag, false, trans),
    label: trans.__('Cell %1, line %2 (since edited)', tag, line ?? '?'),
    sourceLine: facts.textAsRun,
    title:
      facts.lineNow === null
        ? trans.__(
            'The cell was edited after this run. Its line %1 then read: %2. That code is no longer in the cell: go to the cell.',
            line ?? '?',
            facts.textAsRun
          )
        : trans.__(
            'The cell was edited after this run. Its line %1 then read: %2. Go to that code, now line %3.',
            line ?? '?',
            facts.textAsRun,
            facts.lineNow
          ),
    lineNow: facts.lineNow,
    deleted: false
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

/**
 * What a frame of another process's code is to this notebook (see
 * `CellCodeNames.sameCodeElsewhere`): `same code as Cell [3], run by another
 * process`. It never says the notebook ran it: the process that did is not its kernel.
 */
export function elsewhereText(cells: readonly ICellSource[], trans: TranslationBundle): string {
  return trans.__('same code as %1, run by another process', copiesText(cells, null, trans, 'cellLabel'));
}

/** A run of C++ frames shown as one line of a stack. */
export function nativeFramesText(count: number, trans: TranslationBundle): string {
  return trans._n('[%1 C++ frame]', '[%1 C++ frames]', count);
}

/**
 * A frame in one line of text, as the panel names it everywhere: `Cell [5],
 * line 3` for a notebook cell's frame (each cell with that code, see
 * copiesText), else `name (file:line)`, with what another process's cell
 * code resembles (`; same code as Cell [3], run by another process`).
 */
export function frameText(frame: Frame, cells: CellCodeNames, trans: TranslationBundle): string {
  const match = cells.lookup(frame.filename);
  if (match) {
    return copiesText(match.cells, frame.line, trans);
  }
  const elsewhere = cells.sameCodeElsewhere(frame.filename);
  const place = `${frame.filename}:${frame.line}`;
  return elsewhere.length ? `${frame.name} (${place}; ${elsewhereText(elsewhere, trans)})` : `${frame.name} (${place})`;
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
  if (site.line === null) {
    return trans.__('no Python stack');
  }
  const place = `${site.filename.split('/').pop()}:${site.line}`;
  return site.sameCodeElsewhere?.length
    ? trans.__('%1 (%2)', place, elsewhereText(site.sameCodeElsewhere, trans))
    : place;
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
                const { label, sourceLine, title, lineNow, deleted } = cellFrameLabel(cell, frame.line, trans);
                return (
                  <span key={cell.id}>
                    {k > 0 ? ` ${trans.__('or')} ` : ''}
                    {deleted ? (
                      // No cell to go to: words with the line in the title, not a link that does nothing.
                      <span
                        className="jp-CudaMemdiffStack-deleted"
                        data-cuda-memdiff-deleted-cell-id={cell.id}
                        title={title}
                      >
                        {label}
                      </span>
                    ) : (
                      <button
                        className="jp-CudaMemdiffStack-link"
                        data-cuda-memdiff-cell-id={cell.id}
                        title={title}
                        onClick={() => onReveal({ cell, line: lineNow })}
                      >
                        {label}
                      </button>
                    )}
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
        const elsewhere = cells.sameCodeElsewhere(frame.filename);
        return (
          <li key={i} className="jp-CudaMemdiffStack-frame">
            <span className="jp-CudaMemdiffStack-name">{frame.name}</span>{' '}
            <span className="jp-CudaMemdiffStack-file">
              {frame.filename}:{frame.line}
            </span>
            {elsewhere.length ? (
              <span className="jp-CudaMemdiffStack-note"> ({elsewhereText(elsewhere, trans)})</span>
            ) : null}
          </li>
        );
      })}
    </ol>
  );
}
