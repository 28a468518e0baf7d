/**
 * The session chart as a person uses it on the replayed demo: two restarts
 * close together keep their labels apart.
 */
import { expect, test } from '@jupyterlab/galata';
import {
  CODE_CELLS,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  panelSection,
  restartKernel,
  runReplayedDemo,
  setPanelWidth
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

function chartOf(page: Parameters<Parameters<typeof test>[2]>[0]['page']) {
  return panelSection(page, 'chart').getByRole('listbox', { name: 'Cells' });
}

test('two restarts close together keep their labels apart, each line named', async ({ page, tmpPath }) => {
  test.setTimeout(240000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const panel = await openPanel(page);
  for (let k = 0; k < 2; k++) {
    await restartKernel(page);
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.runCell(CODE_CELLS[0]);
    await expect(chartOf(page).getByRole('option')).toHaveCount(CODE_CELLS.length + k + 1, { timeout: 60000 });
  }
  // narrow, as a side panel often is: the two markers are one cell apart
  await setPanelWidth(page, 250);
  const markers = panel.locator('.jp-CudaMemdiffChart-restart');
  await expect(markers).toHaveCount(2);
  await expect(markers.locator('line')).toHaveCount(2);
  const titles = await markers.locator('title').allTextContents();
  expect(titles[0]).toMatch(/^The kernel restarted before \[1\] \(kernel 2\)/);
  expect(titles[1]).toMatch(/^The kernel restarted before \[1\] \(kernel 3\)/);
  const labels = markers.locator('text');
  expect(await labels.count()).toBeGreaterThanOrEqual(1);
  const boxes = [];
  for (const label of await labels.all()) {
    await expect(label).toHaveText('restart');
    expect(await isInsideVisiblePanel(page, label)).toBe(true);
    boxes.push((await label.boundingBox())!);
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i], boxes[j]];
      const apart = a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
      expect(apart, `labels ${i} and ${j}: ${JSON.stringify([a, b])}`).toBe(true);
    }
  }
});
