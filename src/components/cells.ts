/**
 * A notebook's code cells as the engine names them: id, source and place.
 * The panel and the badges both read them, so a cell is named alike in both.
 */
import type { ICellModel } from '@jupyterlab/cells';
import type { ICellSource } from '../engine';

/** The code cells of `cells` (all of a notebook's, in order), each with its place among all of them. */
export function codeCellSources(cells: readonly ICellModel[]): ICellSource[] {
  const total = cells.length;
  const out: ICellSource[] = [];
  cells.forEach((cell, k) => {
    if (cell.type === 'code') {
      out.push({ id: cell.id, source: cell.sharedModel.getSource(), position: { index: k + 1, total } });
    }
  });
  return out;
}
