/**
 * Leaks only the kernel can name, as the panel shows them: the kernel
 * "cuda-memdiff-replay-holders" (ui-tests/jupyter-path) replays
 * exception_kept, recorded on an H200 with the kernel's holders after each
 * cell. Cell [2] catches a failed training step and keeps the exception
 * (`err = e`), whose traceback holds train_step's locals x and h (h with its
 * autograd graph): 256 MiB that no variable shows. The graph rule sees only
 * the 128 MiB of activations and guesses a missing no_grad; the kernel's
 * answer names what keeps it all, and the guess goes.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import { BADGE, contrastOf, findLeakingCell, isInsideVisiblePanel, PANEL, setTheme } from './demo';

const RECORDING = path.resolve(__dirname, '../../test-data/live/exception_kept--holders/manifest.json');
const SOURCES: string[] = JSON.parse(fs.readFileSync(RECORDING, 'utf-8')).cells.map((c: any) => c.source);

test.describe('holders the kernel named', () => {
  test('a kept exception: the panel says what holds the memory and leads with `del err`', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    // The recorded sources as a notebook file: typed into the editor, their indented lines would be indented again.
    const notebook = {
      cells: SOURCES.map(source => ({ cell_type: 'code', source, metadata: {}, outputs: [], execution_count: null })),
      metadata: { kernelspec: { name: 'cuda-memdiff-replay-holders', display_name: 'replay', language: 'python' } },
      nbformat: 4,
      nbformat_minor: 5
    };
    await page.contents.uploadContent(JSON.stringify(notebook), 'text', `${tmpPath}/kept.ipynb`);
    await page.notebook.openByPath(`${tmpPath}/kept.ipynb`);
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    // Cell by cell: without CUDA here each cell's own code fails, and Run All would stop at the first.
    for (const k of SOURCES.keys()) {
      await page.notebook.runCell(k);
    }
    await expect(page.locator(`${BADGE}[data-cuda-memdiff-net-bytes]`)).toHaveCount(SOURCES.length, {
      timeout: 60000
    });

    await findLeakingCell(page);
    // The cell that kept the exception is the one marked.
    await expect(page.locator('.jp-Cell.jp-mod-cudaMemdiffLeak')).toHaveAttribute('data-windowed-list-index', '1');
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-CudaMemdiffLeaks-status')).toContainText(
      'Replaying a recorded session (NVIDIA H200): holders as the kernel named them when the session was recorded.'
    );
    const top = panel.locator('.jp-CudaMemdiffLeak.jp-mod-top');
    await expect(top).toHaveAttribute('data-verdict', 'leak');
    await expect(top.locator('.jp-CudaMemdiffLeak-bytes')).toHaveText('256 MiB');
    // What a person reads first: who holds it, then the fix that frees all of it.
    const reasons = top.locator('.jp-CudaMemdiffLeak-reasons > li');
    await expect(reasons.first()).toHaveText(
      /^When the session was recorded, the kernel found 256 MiB held only by err\.__traceback__: train_step\(\) local h.*local x/
    );
    const fixes = top.getByLabel('What to do').locator(':scope > li');
    await expect(fixes.first()).toHaveText(/^del err: a kept exception keeps its traceback/);
    // The graph is kept only through the exception's frames: a step that raised before its backward pass,
    // not a forward pass that wanted no_grad.
    await expect(fixes).toHaveCount(1);
    await expect(top.locator('.jp-CudaMemdiffLeak-reasons')).not.toContainText('no_grad');
    // Each holder once, told apart from the next.
    await expect(top.locator('.jp-CudaMemdiffLeak-holders')).toHaveText(
      'Held by: err.__traceback__: train_step() local h, err.__traceback__: train_step() local x, ' +
        'autograd graph of err.__traceback__: train_step() local h'
    );
    await expect(top.locator('.jp-CudaMemdiffLeak-evidence > summary')).toHaveText('128 MiB in 1 block allocated here');
    await fixes.first().scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, fixes.first())).toBe(true);
    // Readable in both themes: axe's contrast check on the finding as shown.
    for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
      await setTheme(page, theme);
      const contrast = await contrastOf(page, ['.jp-CudaMemdiffLeak.jp-mod-top']);
      expect(contrast.violations, theme).toEqual([]);
      expect(contrast.checked, theme).toBeGreaterThan(5);
    }
  });
});
