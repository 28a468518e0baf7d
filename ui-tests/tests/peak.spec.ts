import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import { BADGE, isInsideVisiblePanel, openPanel, panelSection, PANEL } from './demo';

// Kernel "cuda-memdiff-replay-history" (ui-tests/jupyter-path) replays a
// session recorded on an H200 with allocation history: cells [2] and [3]
// run `del buf; buf = torch.empty(256 MiB)` again (same address, same size),
// cell [4] peaks at 808 MiB with a 512 MiB temporary (its line 2) it frees
// before it ends. The cells keep their recorded sources, so frames name them.
const RECORDING = path.resolve(__dirname, '../../test-data/live/history--python/manifest.json');
const SOURCES: string[] = JSON.parse(fs.readFileSync(RECORDING, 'utf-8')).cells.map((c: any) => c.source);

test.describe('allocation history', () => {
  test.beforeEach(async ({ page }) => {
    test.setTimeout(180000);
    await page.notebook.createNew('history.ipynb', { kernel: 'cuda-memdiff-replay-history' });
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.setCell(0, 'code', SOURCES[0]);
    for (const source of SOURCES.slice(1, 4)) {
      await page.notebook.addCell('code', source);
    }
    for (const k of [0, 1, 2, 3]) {
      await page.notebook.runCell(k);
    }
    await expect((await page.notebook.getCellLocator(3))!.locator(`:scope > ${BADGE}`)).toHaveAttribute(
      'title',
      /peak/i,
      { timeout: 60000 }
    );
  });

  test("the badge and the panel say what made a cell's peak", async ({ page }) => {
    const badge = (await page.notebook.getCellLocator(3))!.locator(`:scope > ${BADGE}`);
    // Gone by the cell's end, the temporary is what made its peak. Cells [2] and [3] hold the same code (one
    // file name); [3] freed [2]'s buffer and allocated its own, so the 256 MiB alive then are [3]'s. The sites
    // it names add up to the peak with what they leave out.
    await expect(badge).toHaveAttribute(
      'title',
      /At peak \(808 MiB\): 512 MiB from Cell \[4\], line 2; 256 MiB from Cell \[3\], line 2; 32\.0 MiB from Cell \[3\], line 4; 8\.00 MiB elsewhere \(2 more sites\)\./
    );

    await openPanel(page);
    const peak = panelSection(page, 'peak');
    await expect(peak.locator('.jp-CudaMemdiffSection-title')).toHaveText('Peak of Cell [4]');
    await peak.getByRole('button', { name: 'Peak of Cell [4]' }).click();
    await expect(peak.locator('.jp-CudaMemdiffMoment-summary')).toHaveText(
      'At its peak the cell had 808 MiB allocated.'
    );
    const bySite = peak.locator('[data-cuda-memdiff-holders="site"] tbody tr');
    await expect(bySite.first()).toHaveText('512 MiBCell [4], line 2');
    // Cells [2] and [3] hold the same code: the frame cannot tell which ran it, the records can.
    await expect(bySite.nth(1)).toHaveText('256 MiBCell [3], line 2');
    // The panel scrolls to it, as a person would.
    await bySite.first().scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, bySite.first())).toBe(true);
  });

  test('a re-run that frees and allocates at the same address shows both', async ({ page }) => {
    const panel = await openPanel(page);
    // Cell [3] ran cell [2]'s code again: the allocator gave the same addresses back.
    await panel
      .getByRole('listbox', { name: 'Cells' })
      .getByRole('option', { name: /^\[3\] del buf/ })
      .click();
    await expect(page.locator(PANEL).getByRole('status')).toHaveText(
      /^Born\s288\sMiB\sin\s9\sblocks,\sfreed\s288\sMiB\sin\s9\sblocks,\snet\s\+?0\sB$/
    );
  });
});
