/**
 * The user found the leaking cell and deleted it. The frames of its run no
 * longer read as an ipykernel file name: they say a deleted cell made them,
 * which run, and the line as it ran; with no cell to go to, they are words,
 * not a link, and their tooltip says so.
 */
import { expect, test } from '@jupyterlab/galata';
import {
  contrastOf,
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
const SHOTS = process.env.DELETED_CELL_SHOTS ?? '/tmp/h2-shots';

const PREDS_CELL = 4; // preds.append(model(b)), the third code cell, execution [3]
const NOTEBOOK_CELLS = 48;

test('a frame of a deleted cell says so, with its line as it ran, and is no link', async ({ page, tmpPath }) => {
  test.setTimeout(300000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const panel = await openPanel(page);
  const site = await showLeakingRun(panel);

  // The user deletes the leaking cell as one does, in command mode: D, D.
  await page.notebook.selectCells(PREDS_CELL);
  await page.keyboard.press('Escape');
  await page.keyboard.press('d');
  await page.keyboard.press('d');
  await expect
    .poll(() => page.evaluate(() => (window.jupyterapp.shell.currentWidget as any).content.widgets.length))
    .toBe(NOTEBOOK_CELLS - 1);
  expect(await page.notebook.getCellTextInput(PREDS_CELL)).not.toContain('preds.append');

  // The diff says what it compares by the code the run ran, and so does the chart's step.
  await expect(panel.locator('.jp-CudaMemdiffDiff-caption').first()).toHaveText(
    /^A deleted cell \[3\]: preds = \[\], against Cell \[2\] batches/
  );
  await expect(
    panel.getByRole('listbox', { name: 'Cells' }).getByRole('option', { name: /^\[3\] \(deleted\): preds = \[\]/ })
  ).toHaveCount(1);

  // Run [3]'s site and frame name the deleted cell, never its file.
  await expect(site.locator('.jp-CudaMemdiffSite-label')).toHaveText('A deleted cell [3], line 3');
  await site.locator('.jp-CudaMemdiffSite-head').click();
  const frame = site.locator('.jp-CudaMemdiffStack-cell');
  const label = frame.locator('.jp-CudaMemdiffStack-deleted');
  await expect(label).toHaveText('A deleted cell [3], line 3');
  expect(await wheelUntilInside(page, label)).toBe(true);
  await expect.poll(() => isInsideVisiblePanel(page, label)).toBe(true);
  await expect(frame.locator('.jp-CudaMemdiffStack-source')).toHaveText('preds.append(model(b))');
  await expect(frame.locator('.jp-CudaMemdiffStack-source')).toBeVisible();
  await expect(label).toHaveAttribute(
    'title',
    'The cell was deleted after this run: there is no cell to go to. Its line 3 read: preds.append(model(b))'
  );
  await expect(panel.locator('[data-cuda-memdiff-section="diff"]')).not.toContainText('ipykernel_');

  // Words, not a link that goes nowhere: nothing in the frame is a button or a link, and a click moves nothing.
  await expect(frame.getByRole('button')).toHaveCount(0);
  await expect(frame.getByRole('link')).toHaveCount(0);
  const active = () => page.evaluate(() => (window.jupyterapp.shell.currentWidget as any).content.activeCellIndex);
  const before = await active();
  await label.click();
  expect(await active()).toBe(before);
  // A person can read it, in the panel's colours.
  const contrast = await contrastOf(page, [`${PANEL} .jp-CudaMemdiffStack-cell`]);
  expect(contrast.violations).toEqual([]);
  expect(contrast.checked).toBeGreaterThan(0);
  await label.hover();
  await page.screenshot({ path: `${SHOTS}/deleted-frame.png` });
});
