import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import { BADGE, openPanel, panelSection, PANEL_CONTENT } from './demo';

// Kernel "cuda-memdiff-replay-oom" (ui-tests/jupyter-path) replays the oom
// session recorded on an H200: cell [1] holds five 20 GiB tensors (its line
// 3), cell [2] asks for 60 GiB with 39.29 GiB free. The cells keep their
// recorded sources, so the frames name them; their own code fails without CUDA.
const RECORDING = path.resolve(__dirname, '../../test-data/recordings/oom--python/manifest.json');
const SOURCES: string[] = JSON.parse(fs.readFileSync(RECORDING, 'utf-8')).cells.map((c: any) => c.source);

test.describe('after a cell ran out of memory', () => {
  test('the panel opens on the post-mortem: the failed request, the free memory, the top holders', async ({ page }) => {
    test.setTimeout(180000);
    await page.notebook.createNew('oom.ipynb', { kernel: 'cuda-memdiff-replay-oom' });
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.setCell(0, 'code', SOURCES[0]);
    await page.notebook.addCell('code', SOURCES[1]);
    for (const k of [0, 1]) {
      await page.notebook.runCell(k);
    }
    const badge = (await page.notebook.getCellLocator(1))!.locator(`:scope > ${BADGE}`);
    await expect(badge).toHaveAttribute('data-level', 'oom', { timeout: 60000 });
    // The badge's tooltip says why, in words.
    await expect(badge).toHaveAttribute(
      'title',
      /It asked for 60\.0 GiB on cuda:0, with 39\.3 GiB free on the device and 0 B free in PyTorch's segments/
    );
    await expect(badge).toHaveAttribute(
      'title',
      /Not fragmentation: the request is 20\.7 GiB more than all the free memory/
    );
    await expect(badge).toHaveAttribute('title', /The device held: 100 GiB from Cell \[1\], line 3\./);

    await openPanel(page);
    const oom = panelSection(page, 'oom');
    // First in the panel, and in view without scrolling.
    await expect(page.locator(`${PANEL_CONTENT} > :first-child`)).toHaveAttribute('data-cuda-memdiff-section', 'oom');
    await expect(oom).toBeInViewport();
    await expect(oom.locator('.jp-CudaMemdiffSection-title')).toHaveText('Out of memory in Cell [2]');
    await expect(oom.getByRole('alert')).toHaveText('It asked for 60.0 GiB on cuda:0; the device had 39.3 GiB free.');
    const facts = oom.locator('.jp-CudaMemdiffMoment-facts');
    await expect(facts.locator('dt')).toHaveText([
      'Requested',
      'Free on the device',
      "Free in PyTorch's segments",
      'Largest free block'
    ]);
    await expect(facts.locator('dd')).toHaveText(['60.0 GiB', '39.3 GiB', '0 B', '0 B']);
    // No fragmentation here: the device itself was short, by more than all its free memory together.
    await expect(oom.locator('.jp-CudaMemdiffMoment-advice')).toHaveText(
      'Not fragmentation: the request is 20.7 GiB more than all the free memory together, and torch.cuda.empty_cache() cannot help (PyTorch empties its cache before it gives up). Free what filled the device, or ask for less (a smaller batch, shorter sequences).'
    );
    const bySite = oom.locator('[data-cuda-memdiff-holders="site"] tbody tr');
    await expect(bySite).toHaveCount(1);
    await expect(bySite.first()).toHaveText('100 GiBCell [1], line 3');
    await expect(oom.locator('[data-cuda-memdiff-holders="cell"] tbody tr').first()).toHaveText('100 GiBCell [1]');
    // A screen reader names each figure's column; the eye has the caption, and no header row is drawn.
    const table = oom.getByRole('table', { name: 'What filled the device, by site' });
    await expect(table.getByRole('columnheader')).toHaveText(['Memory', 'Allocated at']);
    await expect(oom.getByRole('table', { name: 'By cell' }).getByRole('columnheader')).toHaveText(['Memory', 'Cell']);
    expect((await table.locator('thead').boundingBox())?.height ?? 0).toBeLessThanOrEqual(1);
    await expect(oom.locator('[data-cuda-memdiff-holders="site"]')).toBeInViewport();
    await expect(page.locator(PANEL_CONTENT)).toHaveScreenshot('oom-post-mortem.png', { maxDiffPixelRatio: 0.02 });
  });
});
