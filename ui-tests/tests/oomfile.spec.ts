import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import { contrastOf, openSnapshotFile, setTheme } from './demo';

// A snapshot file written at an out-of-memory error (the H200 recording's
// OOM snapshot: 5 x 20 GiB held, 60 GiB asked for), opened as a person opens
// it: the post-mortem is the first thing its view shows, in the panel's
// words, with the holder named by the cell of the open notebook whose code
// allocated it.
const REC = path.join(__dirname, '..', '..', 'test-data', 'recordings', 'oom--python');

test('an OOM dump opens on its post-mortem', async ({ page, tmpPath }) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));
  const notebook = {
    cells: manifest.cells.map((c: { source: string }) => ({
      cell_type: 'code',
      source: c.source,
      metadata: {},
      outputs: [],
      execution_count: null
    })),
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    nbformat: 4,
    nbformat_minor: 5
  };
  await page.contents.uploadContent(JSON.stringify(notebook), 'text', `${tmpPath}/oom.ipynb`);
  await page.notebook.openByPath(`${tmpPath}/oom.ipynb`);
  await openSnapshotFile(page, path.join(REC, 'oom00.pickle.gz'), tmpPath);

  const view = page.locator('.jp-CudaMemdiffFile', { has: page.locator('h2', { hasText: 'oom00.pickle.gz' }) });
  const oom = view.locator('.jp-CudaMemdiffFile-oom');
  await expect(oom.getByRole('heading')).toHaveText('Out of memory on cuda:0', { timeout: 60000 });
  const summary = oom.getByRole('alert');
  await expect(summary).toHaveText('It asked for 60.0 GiB on cuda:0; the device had 39.3 GiB free.');
  // first: above the file's totals, and on screen without scrolling
  await expect(summary).toBeInViewport();
  const totals = view.locator('.jp-CudaMemdiffFile-totals');
  expect((await summary.boundingBox())!.y).toBeLessThan((await totals.boundingBox())!.y);
  await expect(oom.locator('dl')).toHaveText(
    "Requested60.0 GiBFree on the device39.3 GiBFree in PyTorch's segments0 BLargest free block0 B"
  );
  // the file's frame is the first cell's code, not run in this kernel: named by its place, as the status bar does
  await expect(oom.locator('[data-cuda-memdiff-holders="site"] tr')).toHaveText(['100 GiBCell 1/3, line 3']);

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const { violations, checked } = await contrastOf(page, ['.jp-CudaMemdiffFile-oom']);
    expect(violations, theme).toEqual([]);
    expect(checked, theme).toBeGreaterThan(5);
  }
});
