/**
 * The notebook toolbar items come from the settings schema (jupyter.lab.toolbars),
 * not from inserts at fixed indices: they appear in their declared order, work
 * when clicked, and a settings change hides one.
 */
import { expect, test } from '@jupyterlab/galata';
import { clickNotebookToolbarItem, openReplayedDemo, PANEL } from './demo';

const ITEMS = ['cuda-memdiff-status', 'cuda-memdiff-open-panel', 'cuda-memdiff-find-leaking-cell'];
const NOTEBOOK_PANEL_SETTINGS = '@jupyterlab/notebook-extension:panel';

test.describe('notebook toolbar', () => {
  // Wide enough that the toolbar keeps every item (a narrow one moves the last items into "More commands").
  test.use({ viewport: { width: 1920, height: 1080 } });

  test.beforeEach(async ({ page, tmpPath }) => {
    // waits until the status item says the kernel replays a recorded session
    await openReplayedDemo(page, tmpPath);
  });

  test('shows the status and the two buttons in their declared order, and the buttons work', async ({ page }) => {
    const toolbar = page.locator('.jp-NotebookPanel-toolbar');
    const names = await toolbar
      .locator(':scope > [data-jp-item-name]')
      .evaluateAll(nodes => nodes.map(n => n.getAttribute('data-jp-item-name')));
    const first = names.indexOf(ITEMS[0]);
    expect(first).toBeGreaterThan(names.indexOf('cellType')); // rank 50: after the cell type, before the spacer
    expect(names.slice(first, first + 3)).toEqual(ITEMS);

    const status = toolbar.locator(`[data-jp-item-name="${ITEMS[0]}"]`);
    await expect(status).toBeVisible();
    await expect(status).toHaveText('GPU memory: replaying a recorded session (gpu_memory_demo--python)');

    // Open Panel: the panel comes into view and says there is nothing yet.
    await expect(page.locator(PANEL)).toBeHidden();
    await clickNotebookToolbarItem(page, ITEMS[1]);
    await expect(page.locator(PANEL)).toBeVisible();
    await expect(page.locator(PANEL).getByRole('status').first()).toContainText('No GPU memory snapshots yet');

    // Find Leaking Cell: before any cell ran there is nothing to rank, and the panel says so.
    await clickNotebookToolbarItem(page, ITEMS[2]);
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`)).toContainText('run some cells first');
  });

  test('a settings change hides the status item and leaves the buttons', async ({ page }) => {
    const item = (name: string) => page.locator(`.jp-NotebookPanel-toolbar [data-jp-item-name="${name}"]`);
    await expect(item(ITEMS[0])).toBeVisible();
    await page.evaluate(async id => {
      const registry = await window.galata.getPlugin('@jupyterlab/apputils-extension:settings');
      await registry!.set(id, 'toolbar', [{ name: 'cuda-memdiff-status', disabled: true }]);
    }, NOTEBOOK_PANEL_SETTINGS);
    await expect(item(ITEMS[0])).toHaveCount(0);
    await expect(item(ITEMS[1])).toHaveCount(1);
    await clickNotebookToolbarItem(page, ITEMS[1]);
    await expect(page.locator(PANEL)).toBeVisible();
  });
});
