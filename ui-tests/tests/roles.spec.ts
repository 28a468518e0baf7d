/**
 * Memory by role where the user looks, on a training session the H200
 * recorded with the helper's roles (kernel "cuda-memdiff-replay-roles", see
 * ui-tests/jupyter-path): the badge tooltip breaks each cell's change down by
 * role, and the chart stacks allocated memory by role.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import { BADGE, contrastOf, isInsideVisiblePanel, openPanel, panelSection } from './demo';

const RECORDING = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, '../../test-data/roles/training_roles--python/manifest.json'), 'utf-8')
);
const CELLS = RECORDING.cells.length;

async function runReplayedTraining(page: Parameters<Parameters<typeof test>[2]>[0]['page']) {
  await page.notebook.createNew('roles.ipynb', { kernel: 'cuda-memdiff-replay-roles' });
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', { timeout: 60000 });
  await page.notebook.setCell(0, 'code', 'step_0 = 0');
  for (let k = 1; k < CELLS; k++) {
    await page.notebook.addCell('code', `step_${k} = ${k}`);
  }
  await page.notebook.run();
  await expect(page.locator(`${BADGE}[data-cuda-memdiff-net-bytes]`)).toHaveCount(CELLS, { timeout: 60000 });
}

test.describe('memory by role', () => {
  test('the badge tooltip breaks the cell\u2019s change down by role', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedTraining(page);
    // the training steps (cell 3) left AdamW's state, the gradients and cuBLAS's workspaces
    const training = (await page.notebook.getCellLocator(3))!.locator(`:scope > ${BADGE}`);
    await training.scrollIntoViewIfNeeded();
    await expect(training).toBeVisible();
    const byRole = 'By role: +65.0 MiB workspace, +10.1 MiB optimizer state, +5.06 MiB gradient, +512 B user.';
    await expect(training).toHaveAttribute('title', new RegExp(byRole.replace(/[.+]/g, '\\$&')));
    // screen readers get the same words as the tooltip
    await expect(training).toHaveAttribute('aria-label', new RegExp(byRole.replace(/[.+]/g, '\\$&')));
    // the eval pass outside no_grad (cell 4) left activations, which its graph keeps for backward
    const evalPass = (await page.notebook.getCellLocator(4))!.locator(`:scope > ${BADGE}`);
    await expect(evalPass).toHaveAttribute('title', /By role: \+8\.51 MiB activation, -492 KiB user\./);
    await expect(evalPass).toHaveAttribute(
      'title',
      /After it: 65\.0 MiB workspace, 10\.1 MiB optimizer state, 8\.51 MiB activation/
    );
  });

  test('the chart stacks allocated memory by role', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedTraining(page);
    const panel = await openPanel(page);
    const chart = panelSection(page, 'chart').locator('.jp-CudaMemdiffChart');
    await expect(chart).toBeVisible();
    const toggle = chart.getByRole('button', { name: 'by role' });
    await toggle.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, toggle)).toBe(true);
    await expect(chart.locator('.jp-CudaMemdiffChart-role')).toHaveCount(0);
    await toggle.click();
    await expect(toggle).toHaveAttribute('aria-pressed', 'true');
    // every role the session used has a band, in the kernel's order, and a key in the legend
    const used = [
      'parameter',
      'buffer',
      'gradient',
      'optimizer_state',
      'activation',
      'output_cache',
      'user',
      'workspace'
    ];
    const areas = chart.locator('.jp-CudaMemdiffChart-role');
    await expect(areas).toHaveCount(used.length);
    expect(await areas.evaluateAll(els => els.map(e => [...e.classList].find(c => c.startsWith('jp-mod-'))))).toEqual(
      used.map(r => `jp-mod-${r}`)
    );
    const legend = chart.locator('.jp-CudaMemdiffChart-legend');
    await expect(legend).toContainText('optimizer state');
    await expect(legend).toContainText('activation');
    // drawn, in colours a person can tell apart, inside the part of the panel they see
    const fills = await areas.evaluateAll(els => els.map(e => getComputedStyle(e).fill));
    expect(new Set(fills).size).toBeGreaterThanOrEqual(6);
    const workspace = chart.locator('.jp-CudaMemdiffChart-role.jp-mod-workspace');
    const box = (await workspace.boundingBox())!;
    expect(box.height).toBeGreaterThan(10);
    expect(await isInsideVisiblePanel(page, workspace)).toBe(true);
    // a cell's band names its roles on hover
    await expect(chart.locator('.jp-CudaMemdiffChart-band').nth(4).locator('title')).toContainText(
      '8.51 MiB activation'
    );
    const contrast = await contrastOf(page, ['.jp-CudaMemdiffChart-legend']);
    expect(contrast.violations).toEqual([]);
    expect(await chart.screenshot()).toMatchSnapshot('chart-by-role.png');
    // and back to the lines alone
    await toggle.click();
    await expect(areas).toHaveCount(0);
    expect(panel).toBeTruthy();
  });
});
