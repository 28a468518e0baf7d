/**
 * The notebook toolbar items come from the settings schema (jupyter.lab.toolbars),
 * not from inserts at fixed indices: they appear in their declared order, work
 * when clicked, and a settings change hides one.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import { clickNotebookToolbarItem, openReplayedDemo, PANEL } from './demo';

const OPEN_PANEL = 'cuda-memdiff-open-panel';
const FIND_LEAKING_CELL = 'cuda-memdiff-find-leaking-cell';
const STATUS = 'cuda-memdiff-status';
/** Their declared order: the buttons first, so a narrow toolbar drops the status before them. */
const ITEMS = [OPEN_PANEL, FIND_LEAKING_CELL, STATUS];
const NOTEBOOK_PANEL_SETTINGS = '@jupyterlab/notebook-extension:panel';

test.describe('notebook toolbar', () => {
  // Wide enough that the toolbar keeps every item (a narrow one moves the last items into "More commands").
  test.use({ viewport: { width: 1920, height: 1080 } });

  test.beforeEach(async ({ page, tmpPath }) => {
    // waits until the status item says the kernel replays a recorded session
    await openReplayedDemo(page, tmpPath);
  });

  test('shows the two buttons and the status in their declared order, and the buttons work', async ({ page }) => {
    const toolbar = page.locator('.jp-NotebookPanel-toolbar');
    const names = await toolbar
      .locator(':scope > [data-jp-item-name]')
      .evaluateAll(nodes => nodes.map(n => n.getAttribute('data-jp-item-name')));
    const first = names.indexOf(ITEMS[0]);
    expect(first).toBeGreaterThan(names.indexOf('cellType')); // ranks 50-52: after the cell type, before the spacer
    expect(names.slice(first, first + 3)).toEqual(ITEMS);

    const status = toolbar.locator(`[data-jp-item-name="${STATUS}"]`);
    await expect(status).toBeVisible();
    // named by the GPU it was recorded on, not by the folder's name (gpu_memory_demo--holders), which the tooltip keeps
    await expect(status).toHaveText('GPU memory: replaying a recorded session (NVIDIA H200)');

    // Open Panel: the panel comes into view and says there is nothing yet.
    await expect(page.locator(PANEL)).toBeHidden();
    await clickNotebookToolbarItem(page, OPEN_PANEL);
    await expect(page.locator(PANEL)).toBeVisible();
    await expect(page.locator(PANEL).getByRole('status').first()).toContainText('No GPU memory snapshots yet');

    // Find Leaking Cell: before any cell ran there is nothing to rank, and the panel says so.
    await clickNotebookToolbarItem(page, FIND_LEAKING_CELL);
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`)).toContainText('run some cells first');
  });

  test('a settings change hides the status item and leaves the buttons', async ({ page }) => {
    const item = (name: string) => page.locator(`.jp-NotebookPanel-toolbar [data-jp-item-name="${name}"]`);
    await expect(item(STATUS)).toBeVisible();
    await page.evaluate(async id => {
      const registry = await window.galata.getPlugin('@jupyterlab/apputils-extension:settings');
      await registry!.set(id, 'toolbar', [{ name: 'cuda-memdiff-status', disabled: true }]);
    }, NOTEBOOK_PANEL_SETTINGS);
    await expect(item(STATUS)).toHaveCount(0);
    await expect(item(OPEN_PANEL)).toHaveCount(1);
    await clickNotebookToolbarItem(page, OPEN_PANEL);
    await expect(page.locator(PANEL)).toBeVisible();
  });
});

test.describe('notebook toolbar beside the open panel', () => {
  // A laptop-sized window with the panel open: the demo tells the user to
  // click the magnifier, so both buttons must stay in the toolbar itself.
  test.use({ viewport: { width: 1400, height: 900 } });

  test('keeps both buttons in sight and cuts the status short', async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    await expect(page.locator(PANEL)).toBeVisible();
    const toolbar = page.locator('.jp-NotebookPanel-toolbar');
    for (const name of [OPEN_PANEL, FIND_LEAKING_CELL]) {
      const button = toolbar.locator(`:scope > [data-jp-item-name="${name}"] button`);
      await expect(button).toBeInViewport({ ratio: 1 });
    }
    // The magnifier works from where it is.
    await toolbar.locator(`:scope > [data-jp-item-name="${FIND_LEAKING_CELL}"] button`).click();
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`)).toContainText('run some cells first');
    // Where the status is shown, it fits on one line and its title says it all.
    const status = page.locator(`[data-jp-item-name="${STATUS}"]`);
    const box = await status.boundingBox();
    const toolbarBox = await toolbar.boundingBox();
    if (box) {
      expect(box.height).toBeLessThanOrEqual(toolbarBox!.height);
    }
    await expect(status).toHaveAttribute(
      'title',
      /replaying a recorded session \(NVIDIA H200\)\nRecording: gpu_memory_demo \(folder gpu_memory_demo--holders\)/
    );
    // Cut short here: its text is wider than the room it has ...
    const widths = await status.evaluate(el => {
      const range = document.createRange();
      range.selectNodeContents(el);
      return { text: range.getBoundingClientRect().width, box: el.getBoundingClientRect().width };
    });
    expect(widths.text).toBeGreaterThan(widths.box);
    // ... and the cut is marked by an ellipsis, not made mid-letter: without the ellipsis it draws otherwise.
    await page.mouse.move(0, 0);
    const withEllipsis = await status.screenshot();
    await page.addStyleTag({
      content: '.jp-CudaMemdiffStatus, .jp-CudaMemdiffStatus * { text-overflow: clip !important; }'
    });
    const clipped = await status.screenshot();
    expect(withEllipsis.equals(clipped)).toBe(false);
    await test.info().attach('status', { body: withEllipsis, contentType: 'image/png' });
    fs.writeFileSync(test.info().outputPath('status.png'), withEllipsis);
  });
});
