import { expect, test } from '@jupyterlab/galata';

const PLUGIN_ID = 'jupyterlab-cuda-memdiff:plugin';
const PANEL = '#cuda-memdiff-panel';

test.describe('extension', () => {
  test('is loaded by JupyterLab', async ({ page }) => {
    const loaded = await page.evaluate(id => window.jupyterapp.hasPlugin(id), PLUGIN_ID);
    expect(loaded).toBe(true);
    const activated = await page.evaluate(id => window.jupyterapp.isPluginActivated(id), PLUGIN_ID);
    expect(activated).toBe(true);
  });

  test('opens its side panel from the command', async ({ page }) => {
    expect(await page.evaluate(() => window.jupyterapp.commands.hasCommand('cuda-memdiff:open-panel'))).toBe(true);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await expect(panel).toBeVisible();
    await expect(panel.getByRole('status')).toContainText('No GPU memory snapshots yet');
    await expect(page.getByRole('region', { name: 'CUDA Memory', exact: true })).toHaveAttribute(
      'id',
      'cuda-memdiff-panel'
    );
    // Every word of the first thing a person reads is inside the panel, the long
    // torch.cuda.memory._dump_snapshot() too, at the sidebar width JupyterLab opens with.
    const box = (await panel.boundingBox())!;
    const textRights = await panel.getByRole('status').evaluate(status =>
      [...status.querySelectorAll('p')].map(p => {
        const text = document.createRange();
        text.selectNodeContents(p);
        return text.getBoundingClientRect().right;
      })
    );
    expect(textRights.length).toBeGreaterThan(1);
    for (const right of textRights) {
      expect(right).toBeLessThanOrEqual(box.x + box.width);
    }
    // The long name wraps after a dot, never inside a part: each part lies on one line.
    const name = panel.locator('code', { hasText: '_dump_snapshot()' });
    await expect(name).toHaveText('torch.cuda.memory._dump_snapshot()');
    const linesPerPart = await name.evaluate(code =>
      [...code.childNodes]
        .filter(n => n.nodeType === Node.TEXT_NODE && n.textContent !== '.')
        .map(n => {
          const part = document.createRange();
          part.selectNodeContents(n);
          return [n.textContent, new Set([...part.getClientRects()].map(r => Math.round(r.top))).size];
        })
    );
    expect(linesPerPart).toEqual([
      ['torch', 1],
      ['cuda', 1],
      ['memory', 1],
      ['_dump_snapshot()', 1]
    ]);
  });

  test('says why a notebook gives it nothing: a kernel whose torch has no CUDA, a kernel not Python', async ({
    page
  }) => {
    await page.notebook.createNew(undefined, { kernel: 'python3' });
    await page.notebook.setCell(0, 'code', 'import torch');
    await page.notebook.runCell(0);
    const status = page.locator('.jp-NotebookPanel-toolbar [data-jp-item-name="cuda-memdiff-status"]');
    await expect(status).toHaveText('GPU memory: torch without CUDA');
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const empty = page.locator(`${PANEL} .jp-CudaMemdiffPanel-empty`);
    await expect(empty).toContainText("This notebook's kernel has torch without CUDA");
    await expect(empty).not.toContainText('Run cells of a notebook');
    // and where to go instead: a snapshot file
    await expect(empty).toContainText('Or drop snapshot files written by torch.cuda.memory._dump_snapshot() here');
    // The panel follows the notebook in front: a bash notebook's kernel is not Python.
    await page.notebook.createNew(undefined, { kernel: 'bash' });
    await expect(empty).toContainText("This notebook's kernel is not Python");
  });

  test('opens its side panel from the command palette', async ({ page }) => {
    await page.keyboard.press('Control+Shift+c');
    await page.locator('#command-palette input').fill('CUDA Memory Panel');
    await page.locator('#command-palette .lm-CommandPalette-item', { hasText: 'Open CUDA Memory Panel' }).click();
    await expect(page.locator(PANEL)).toBeVisible();
    // The keyboard comes with it: the panel's content takes the focus, shown by its ring.
    const content = page.locator(`${PANEL} .jp-CudaMemdiffPanel-content`);
    await expect(content).toBeFocused();
    // Asked again while it is open and the keyboard is elsewhere (a notebook's cell), it comes back.
    await page.notebook.createNew();
    await page.notebook.enterCellEditingMode(0);
    await expect(content).not.toBeFocused();
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+Shift+c');
    await page.locator('#command-palette input').fill('CUDA Memory Panel');
    await page.keyboard.press('Enter');
    await expect(content).toBeFocused();
  });
});
