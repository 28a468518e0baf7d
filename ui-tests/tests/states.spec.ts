/**
 * What the panel says in states a person meets early: a kernel restart
 * (marked on the chart, told apart in the pickers) and a CPU-only kernel
 * (Find Leaking Cell says there is no GPU memory, not "run some cells").
 */
import { expect, test } from '@jupyterlab/galata';
import {
  BADGE,
  CODE_CELLS,
  contrastOf,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  PANEL,
  restartKernel,
  runReplayedDemo,
  setTheme
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

test('a kernel restart is marked on the chart and told apart in the pickers', async ({ page, tmpPath }) => {
  test.setTimeout(180000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const panel = await openPanel(page);
  await expect(panel.locator('.jp-CudaMemdiffChart-restart')).toHaveCount(0);

  await restartKernel(page);
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', { timeout: 60000 });
  await page.notebook.runCell(CODE_CELLS[0]);

  const marker = panel.locator('.jp-CudaMemdiffChart-restart');
  await expect(marker).toHaveCount(1);
  await expect.poll(() => isInsideVisiblePanel(page, marker)).toBe(true);
  await expect(panel.locator('.jp-CudaMemdiffChart-legend')).toContainText('kernel restart');
  // torch's peak counter is the new kernel's, lower than the steps drawn before the restart: said so
  await expect(panel.locator('.jp-CudaMemdiffPanel-sessionPeak')).toHaveText('Peak in kernel 2: 128 MiB allocated');
  await page.mouse.move(0, 0);
  expect(await panel.locator('[data-cuda-memdiff-section="chart"]').screenshot()).toMatchSnapshot('chart-restart.png');
  // the same cell before and after the restart reads differently in the pickers
  const options = await panel.locator('[data-cuda-memdiff-side="after"] option').allTextContents();
  expect(options.filter(o => o.startsWith('[1] in kernel 1: '))).toHaveLength(1);
  expect(options.filter(o => o.startsWith('[1] in kernel 2: '))).toHaveLength(1);
  await expect(panel.locator('[data-cuda-memdiff-side="after"] option:checked')).toHaveText(/^\[1\] in kernel 2: /);

  // the previous kernel's badges are marked stale, and still readable in both themes
  await expect(page.locator(`${BADGE}.jp-CudaMemdiffBadge-stale`)).not.toHaveCount(0);
  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const result = await contrastOf(page, [BADGE]);
    expect(result.violations, theme).toEqual([]);
    expect(result.checked).toBeGreaterThan(0);
  }
});

test('Find Leaking Cell in a CPU-only kernel says there is no GPU memory to rank', async ({ page }) => {
  test.setTimeout(120000);
  await page.notebook.createNew(undefined, { kernel: 'python3' });
  await expect(page.locator('.jp-CudaMemdiffStatus')).toHaveText('GPU memory: waiting for torch', { timeout: 60000 });
  await page.notebook.setCell(0, 'code', 'import torch\nx = torch.ones(3)');
  await page.notebook.runCell(0);
  await expect(page.locator('.jp-CudaMemdiffStatus')).toHaveText('GPU memory: torch without CUDA');
  await openPanel(page);
  await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:find-leaking-cell'));
  const status = page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`);
  await expect(status).toHaveText("This kernel's torch has no CUDA: there is no GPU memory to rank.");
  await expect.poll(() => isInsideVisiblePanel(page, status)).toBe(true);
});
