/**
 * The usual move after finding a leak: fix the cell, run it again. The
 * frames of the cell's earlier run stay links to it: they say the cell was
 * edited since, show the line as it ran, and a click lands on that code where
 * it is now.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import {
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  PANEL,
  runReplayedDemo,
  showLeakingRun,
  wheelUntilInside
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

/** Where the screenshots go: looked at by hand, not compared. */
const SHOTS = process.env.EDITED_CELL_SHOTS ?? '/tmp/hB-shots';

const PREDS_CELL = 4; // preds.append(model(b)), the third code cell, execution [3]
const LAST_CELL = 47; // print('end of notebook'), below the filler
// The fix: a word above, the loop under no_grad. The line that allocated, line 3 as run, is line 5 now.
const FIXED =
  '# evaluation only\npreds = []\nwith torch.no_grad():\n    for b in batches:\n        preds.append(model(b))';

type Page = Parameters<Parameters<typeof test>[2]>[0]['page'];

/** Whether the element lies wholly inside the notebook's visible scrolling area. */
async function isInsideNotebook(page: Page, element: Locator): Promise<boolean> {
  const box = await element.boundingBox();
  const notebook = await page.locator('.jp-NotebookPanel-notebook').boundingBox();
  return (
    box !== null &&
    notebook !== null &&
    box.y >= notebook.y - 1 &&
    box.y + box.height <= notebook.y + notebook.height + 1 &&
    box.x >= notebook.x - 1 &&
    box.x + box.width <= notebook.x + notebook.width + 1
  );
}

/** The notebook's cell at an index, without scrolling to it (absent while the windowed notebook has not drawn it). */
function cellAt(page: Page, index: number): Locator {
  return page.locator(`.jp-NotebookPanel-notebook .jp-Cell[data-windowed-list-index="${index}"]`);
}

/** The notebook's active cell and its cursor, as the notebook widget holds them. */
function activeCursor(page: Page) {
  return page.evaluate(() => {
    const nb = (window.jupyterapp.shell.currentWidget as any).content;
    return { cell: nb.activeCellIndex, mode: nb.mode, cursor: nb.activeCell.editor.getCursorPosition() };
  });
}

test('a frame of the run before an edit stays a link, says so, and lands where its code is now', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(300000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const site = await showLeakingRun(await openPanel(page));

  // The user fixes the cell as one pastes it in, and runs it again (the recording has no run of the new code:
  // the kernel says so, and run [3] stays the one shown).
  await page.notebook.enterCellEditingMode(PREDS_CELL);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(FIXED);
  await expect(site.locator('.jp-CudaMemdiffSite-label')).toHaveText('Cell [3], line 3 (since edited)');
  await page.keyboard.press('Shift+Enter');
  await expect(cellAt(page, PREDS_CELL).locator(':scope > .jp-CudaMemdiffBadge')).toHaveAttribute(
    'title',
    /not in the replayed recording/,
    { timeout: 60000 }
  );
  expect(await page.notebook.getCellTextInput(PREDS_CELL)).toBe(FIXED);

  // Run [3]'s frame: a link, in view in the panel, that says the cell was edited and shows the line as run.
  await site.locator('.jp-CudaMemdiffSite-head').click();
  const frame = site.locator('.jp-CudaMemdiffStack-cell');
  const link = frame.getByRole('button', { name: 'Cell [3], line 3 (since edited)', exact: true });
  expect(await wheelUntilInside(page, link)).toBe(true);
  await expect.poll(() => isInsideVisiblePanel(page, link)).toBe(true);
  await expect(frame.locator('.jp-CudaMemdiffStack-source')).toHaveText('preds.append(model(b))');
  await expect(link).toHaveAttribute(
    'title',
    'The cell was edited after this run. Its line 3 then read: preds.append(model(b)). Go to that code, now line 5.'
  );
  await page.screenshot({ path: `${SHOTS}/edited-frame.png` });

  // The cell is out of view; the click brings it into view with the cursor on that code's line now.
  await page.notebook.selectCells(LAST_CELL);
  await expect.poll(() => isInsideNotebook(page, cellAt(page, PREDS_CELL))).toBe(false);
  await link.click();
  await expect
    .poll(() => activeCursor(page))
    .toEqual({ cell: PREDS_CELL, mode: 'edit', cursor: { line: 4, column: 0 } });
  const cell = cellAt(page, PREDS_CELL);
  const landed = cell.locator('.cm-line').nth(4);
  await expect(landed).toHaveText('        preds.append(model(b))');
  await expect.poll(() => isInsideNotebook(page, landed)).toBe(true);
  // what the status bar tells the user
  await expect(page.locator('#jp-main-statusbar').getByRole('button', { name: /^Ln \d+, Col \d+$/ })).toHaveText(
    'Ln 5, Col 1'
  );
  await page.screenshot({ path: `${SHOTS}/edited-frame-landed.png` });

  // An edit that removes the code: the frame still names the cell, and a click selects the cell alone.
  await page.notebook.enterCellEditingMode(PREDS_CELL);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText('preds = [model(b).detach() for b in batches]');
  await page.keyboard.press('Escape');
  await expect(link).toHaveAttribute('title', /That code is no longer in the cell: go to the cell\.$/);
  await page.notebook.selectCells(LAST_CELL);
  expect(await wheelUntilInside(page, link)).toBe(true);
  await link.click();
  await expect.poll(() => activeCursor(page).then(a => [a.cell, a.mode])).toEqual([PREDS_CELL, 'command']);
  await expect.poll(() => isInsideNotebook(page, cellAt(page, PREDS_CELL))).toBe(true);
  await expect(page.locator(`${PANEL} .jp-CudaMemdiffStack-link`).first()).toBeVisible();
});
