/**
 * Marks the cell the leak finder names: one highlighted cell per notebook,
 * scrolled into view and made active, so the user lands on it.
 */
import { NotebookPanel } from '@jupyterlab/notebook';

/** CSS class of the highlighted cell. */
export const LEAKING_CELL_CLASS = 'jp-mod-cudaMemdiffLeak';

/** Highlight the cell with this id (none when null) and scroll it into view. */
export async function highlightCell(panel: NotebookPanel, cellId: string | null): Promise<void> {
  const notebook = panel.content;
  notebook.widgets.forEach(cell => cell.toggleClass(LEAKING_CELL_CLASS, cell.model.id === cellId));
  const index = cellId === null ? -1 : notebook.widgets.findIndex(c => c.model.id === cellId);
  if (index < 0) {
    return;
  }
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'center');
}
