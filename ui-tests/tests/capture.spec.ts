import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import { BADGE, CODE_CELLS, openReplayedDemo } from './demo';

// The demo notebook's session recorded on an H200: the replaying kernel serves
// these snapshots, so each badge must show the recorded allocator figures.
const RECORDING = path.resolve(__dirname, '../../test-data/recordings/gpu_memory_demo--python/manifest.json');
const manifest = JSON.parse(fs.readFileSync(RECORDING, 'utf-8'));
const NETS: number[] = manifest.cells.map((c: any) => c.after.allocated - c.before.allocated);
const PEAKS: number[] = manifest.cells.map((c: any) => c.after.max_allocated);


async function badgeOf(page: any, cellIndex: number) {
  const cell = await page.notebook.getCellLocator(cellIndex);
  return cell!.locator(`:scope > ${BADGE}`);
}

async function expectRecordedBadges(page: any) {
  for (let k = 0; k < CODE_CELLS.length; k++) {
    const badge = await badgeOf(page, CODE_CELLS[k]);
    await expect(badge).toHaveAttribute('data-cuda-memdiff-net-bytes', String(NETS[k]));
    await expect(badge).toHaveAttribute('data-cuda-memdiff-peak-bytes', String(PEAKS[k]));
  }
}

test.describe('capture in a CPU kernel', () => {
  test('says once, in the toolbar, that torch has no CUDA', async ({ page }) => {
    await page.notebook.createNew(undefined, { kernel: 'python3' });
    const status = page.locator('.jp-CudaMemdiffStatus');
    await expect(status).toHaveText('GPU memory: torch without CUDA', { timeout: 60000 });
    await expect(status).toHaveAttribute('data-cuda-memdiff-status', 'no-cuda');
    await page.notebook.setCell(0, 'code', 'import torch\nx = torch.ones(3)');
    await page.notebook.runCell(0);
    await expect(page.locator(BADGE)).toHaveCount(0);
  });
});

test.describe('kernels', () => {
  test('leaves a non-Python kernel alone', async ({ page }) => {
    await page.notebook.createNew(undefined, { kernel: 'bash' });
    const status = page.locator('.jp-CudaMemdiffStatus');
    await expect(status).toHaveAttribute('data-cuda-memdiff-status', 'not-python', { timeout: 60000 });
    await expect(status).toBeHidden();
    await page.notebook.setCell(0, 'code', 'echo hello');
    await page.notebook.runCell(0);
    expect(await page.notebook.getCellTextOutput(0)).toEqual(['hello\n']);
    await expect(page.locator(BADGE)).toHaveCount(0);
  });

  test('installs the helper again after a kernel change', async ({ page }) => {
    await page.notebook.createNew(undefined, { kernel: 'cuda-memdiff-replay' });
    const status = page.locator('.jp-CudaMemdiffStatus');
    await expect(status).toContainText('replaying a recorded session', { timeout: 60000 });
    await page.evaluate(async () => {
      const panel = window.jupyterapp.shell.currentWidget as any;
      await panel.sessionContext.changeKernel({ name: 'python3' });
    });
    await expect(status).toHaveText('GPU memory: torch without CUDA', { timeout: 60000 });
  });
});

test.describe('capture replaying an H200 session', () => {
  test.beforeEach(async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
  });

  test('badges each cell as it runs', async ({ page }) => {
    // four cells one by one: about 40 s alone, past the default 60 s on a loaded machine
    test.setTimeout(120000);
    for (const index of CODE_CELLS) {
      await page.notebook.runCell(index);
    }
    await expectRecordedBadges(page);
    const badge = await badgeOf(page, CODE_CELLS[2]);
    await expect(badge).toHaveText(/^\+321 MiB · peak 481 MiB$/);
    await expect(badge).toHaveAttribute('aria-label', /cuda:0: .* free of .*used outside PyTorch's allocator/);
    await expect(badge).toHaveAttribute('data-level', 'warn');
  });

  test('keeps badges right after Run All, scrolling and a kernel restart', async ({ page }) => {
    test.setTimeout(180000);
    await page.notebook.run();
    await expectRecordedBadges(page);

    // Scroll the windowed notebook to the end and back.
    await page.notebook.selectCells(46);
    await (await page.notebook.getCellLocator(46))!.scrollIntoViewIfNeeded();
    await (await page.notebook.getCellLocator(0))!.scrollIntoViewIfNeeded();
    await expectRecordedBadges(page);

    // The command waits for the dialog: start it without awaiting, then answer.
    await page.evaluate(() => {
      void window.jupyterapp.commands.execute('notebook:restart-kernel', { activate: false });
    });
    await page.locator('.jp-Dialog').getByRole('button', { name: 'Confirm Kernel Restart' }).click();
    const first = await badgeOf(page, CODE_CELLS[0]);
    await expect(first).toHaveClass(/jp-CudaMemdiffBadge-stale/, { timeout: 60000 });
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.runCell(CODE_CELLS[0]);
    await expect(first).not.toHaveClass(/jp-CudaMemdiffBadge-stale/);
    await expect(first).toHaveAttribute('data-cuda-memdiff-net-bytes', String(NETS[0]));
  });
});
