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
