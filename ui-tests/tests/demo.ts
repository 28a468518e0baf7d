/**
 * Page-object helpers shared by the specs: the demo notebook replayed from
 * its H200 recording (kernel "cuda-memdiff-replay", see demo/jupyter-path/).
 */
import { expect, IJupyterLabPageFixture } from '@jupyterlab/galata';
import * as path from 'path';

export const NOTEBOOK = 'replay_demo.ipynb';
export const PANEL = '#cuda-memdiff-panel';
export const BADGE = '.jp-CudaMemdiffBadge';
/** Notebook positions of the demo's four code cells (markdown between them). */
export const CODE_CELLS = [1, 2, 4, 6];

/** Upload and open the demo notebook; wait until its kernel replays the recording. */
export async function openReplayedDemo(page: IJupyterLabPageFixture, tmpPath: string): Promise<void> {
  await page.contents.uploadFile(path.resolve(__dirname, 'notebooks', NOTEBOOK), `${tmpPath}/${NOTEBOOK}`);
  await page.notebook.openByPath(`${tmpPath}/${NOTEBOOK}`);
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
    timeout: 60000
  });
}

/** Run every cell of the opened demo and wait for the four badges. */
export async function runReplayedDemo(page: IJupyterLabPageFixture): Promise<void> {
  await page.notebook.run();
  // Badges with figures; the last cell, not in the recording, says so instead.
  await expect(page.locator(`${BADGE}[data-cuda-memdiff-net-bytes]`)).toHaveCount(CODE_CELLS.length, { timeout: 60000 });
}

/** Click a notebook toolbar item by name, opening the overflow menu when the toolbar is too narrow for it. */
export async function clickNotebookToolbarItem(page: IJupyterLabPageFixture, name: string): Promise<void> {
  const button = page.locator(`[data-jp-item-name="${name}"] button`);
  const more = page.locator('.jp-NotebookPanel-toolbar').getByRole('button', { name: 'More commands' });
  const overflowed = !(await button.isVisible());
  if (overflowed) {
    await more.click();
  }
  await button.click();
  if (overflowed) {
    await more.click(); // close the overflow popup again
  }
}
