/**
 * A notebook's code cells as the engine names them: id, source and place.
 * The panel and the badges both read them, so a cell is named alike in both;
 * and a cell's first line as a label quotes it.
 */
import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import type { ICellSource } from '../engine';

/** The code cells of `cells` (all of a notebook's, in order), each with its place among all of them. */
export function codeCellSources(cells: readonly ICellModel[]): ICellSource[] {
  const total = cells.length;
  const out: ICellSource[] = [];
  cells.forEach((cell, k) => {
    if (cell.type === 'code') {
      out.push({
        id: cell.id,
        source: cell.sharedModel.getSource(),
        position: { index: k + 1, total },
        prompt: (cell as ICodeCellModel).executionCount
      });
    }
  });
  return out;
}

/** Most characters of a cell's first line a label quotes; a longer one is cut with `…`. */
const HEADLINE_LENGTH = 40;

/**
 * A cell's first non-blank line as a label quotes it (`with torch.no_grad()`):
 * a trailing `:` is dropped, since the label's own punctuation follows (`Cell
 * [4] with torch.no_grad():, against ...`, `...():: 513 MiB` read badly).
 */
export function sourceHeadline(source: string): string {
  const first = (source.split('\n').find(line => line.trim()) ?? '').trim().replace(/\s*:$/, '');
  return first.length > HEADLINE_LENGTH ? first.slice(0, HEADLINE_LENGTH - 1) + '…' : first;
}
