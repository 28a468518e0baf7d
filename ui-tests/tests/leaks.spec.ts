/**
 * "Find leaking cell" end to end: the demo notebook, replayed from its H200
 * recording by a real ipykernel, leaks through `preds` (a forward pass kept
 * outside torch.no_grad()); the command must highlight that cell, rank it
 * first in the panel and say why and what to do.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import {
  clickNotebookToolbarItem,
  CODE_CELLS,
  NOTEBOOK,
  openReplayedDemo,
  PANEL,
  restartKernel,
  runReplayedDemo,
  setTheme
} from './demo';

const COMMAND = 'cuda-memdiff:find-leaking-cell';
const LEAKING = '.jp-Cell.jp-mod-cudaMemdiffLeak';
// The demo's third code cell builds `preds`.
const PREDS_CELL = CODE_CELLS[2];

test.describe('find leaking cell', () => {
  test.beforeEach(async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
  });

  test('highlights the cell that builds preds, from the notebook toolbar', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedDemo(page);
    await expect(page.locator(LEAKING)).toHaveCount(0);
    // The last code cell's badge: the sites it names at the peak add up to it with what they leave out.
    await expect(
      (await page.notebook.getCellLocator(CODE_CELLS[3]))!.locator(':scope > .jp-CudaMemdiffBadge')
    ).toHaveAttribute(
      'title',
      /At peak \(541 MiB\): 321 MiB from Cell \[3\], line 3; .*; 32\.0 MiB from Cell \[2\], line 1\./
    );
    await clickNotebookToolbarItem(page, 'cuda-memdiff-find-leaking-cell');

    const leaking = page.locator(LEAKING);
    await expect(leaking).toHaveCount(1);
    await expect(leaking).toHaveAttribute('data-windowed-list-index', String(PREDS_CELL));
    await expect(leaking).toContainText('preds.append(model(b))');
    await expect(leaking).toBeInViewport();

    const panel = page.locator(PANEL);
    await expect(panel).toBeVisible();
    const status = panel.locator('.jp-CudaMemdiffLeaks-status');
    await expect(status).toContainText('Look at Cell [3] first.');
    // the replay kernel answers the holders request with what the kernel named when the demo was recorded
    await expect(status).toContainText(
      'Replaying a recorded session (NVIDIA H200): holders as the kernel named them when the session was recorded.'
    );
    await expect(status).toHaveAttribute('title', 'Recording: gpu_memory_demo (folder gpu_memory_demo--holders)');
    const top = panel.locator('.jp-CudaMemdiffLeak.jp-mod-top');
    await expect(top).toHaveAttribute('data-verdict', 'leak');
    await expect(top).toContainText('autograd graph of preds');
    // Only the paths are set as code: the words around them ("autograd graph of", "and maybe more") are text.
    const heldBy = top.locator('.jp-CudaMemdiffLeak-holders');
    await expect(heldBy).toHaveText('Held by: autograd graph of preds[0:8], preds[0:8]');
    await expect(heldBy.locator('code')).toHaveText(['preds[0:8]', 'preds[0:8]']);
    const cell1 = panel.locator('.jp-CudaMemdiffLeak', { hasText: 'Retained' }).filter({ hasText: 'model.0.weight' });
    await expect(cell1.locator('.jp-CudaMemdiffLeak-holders code').last()).toHaveText('preds[0:3]');
    await expect(cell1.locator('.jp-CudaMemdiffLeak-holders')).toContainText(
      'autograd graph of preds[0:3] and maybe more'
    );
    // The kernel's line accounts for all 288 MiB the leak is: the graph's 256 MiB and the outputs `preds` holds,
    // as the kernel named them when the session was recorded (a replay asks no live kernel).
    await expect(top).toContainText(
      'Confirmed by the kernel when the session was recorded: 256 MiB held only by autograd graph of preds[0:8]; 32.0 MiB held by preds[0:8].'
    );
    // The headline is the whole leak; each fix says how much of it it frees: torch.no_grad() frees what the
    // graph saved, not the outputs `preds` keeps, which only dropping `preds` frees (with the graph).
    await expect(top.locator('.jp-CudaMemdiffLeak-verdict')).toHaveText('Leak');
    await expect(top.locator('.jp-CudaMemdiffLeak-bytes')).toHaveText('288 MiB');
    const advice = top.getByLabel('What to do').locator(':scope > li');
    await expect(advice).toHaveText([
      'Frees 256 MiB of the 288 MiB: Evaluate under torch.no_grad() (or torch.inference_mode()), or keep .detach()ed outputs.',
      'Frees all 288 MiB: del preds once you are done with the tensors it keeps (or keep .cpu() copies): the other fixes leave them on the GPU.'
    ]);
    await expect(advice.nth(0).locator('code').first()).toHaveText('torch.no_grad()');
    await advice.last().scrollIntoViewIfNeeded();
    await expect(advice.last()).toBeInViewport();
    await expect(top).toContainText('256 MiB of it is tensors saved for backward by a live autograd graph.');
    await expect(top).toContainText('32.0 MiB of it is tensors your code keeps');
    await page.mouse.move(0, 0);
    await top.screenshot({ path: test.info().outputPath('leaks-parts.png') });
    // the model's weights and the inputs stay, as they should
    await expect(panel.locator('.jp-CudaMemdiffLeak[data-verdict="retained"]')).toHaveCount(3);
    await expect(panel.locator('.jp-CudaMemdiffLeak[data-verdict="leak"]')).toHaveCount(1);

    // closing the findings takes the highlight away
    await panel.getByLabel('Close the leak finder').click();
    await expect(page.locator(LEAKING)).toHaveCount(0);
  });

  test('takes the outline and the findings away when the kernel restarts: that memory is gone', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedDemo(page);
    await page.evaluate(id => window.jupyterapp.commands.execute(id), COMMAND);
    const outlined = await page.notebook.getCellLocator(PREDS_CELL);
    await expect(page.locator(LEAKING)).toHaveAttribute('data-windowed-list-index', String(PREDS_CELL));
    const outline = () => outlined!.evaluate(node => getComputedStyle(node).outlineStyle);
    expect(await outline()).toBe('solid');
    const status = page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`);
    await expect(status).toContainText('Look at Cell [3] first.');

    await restartKernel(page);
    await expect(page.locator(LEAKING)).toHaveCount(0);
    await outlined!.scrollIntoViewIfNeeded();
    await expect(outlined!).toBeInViewport();
    await expect.poll(outline).toBe('none');
    await expect(status).toHaveCount(0);
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeak`)).toHaveCount(0);
  });

  test('names a run its cell no longer shows by the highlighted cell, not by a prompt that is gone', async ({
    page
  }) => {
    test.setTimeout(180000);
    await runReplayedDemo(page);
    // The cell that builds preds runs again: the replay has no second run of it, so its prompt shows [6] and
    // its badge a note; the leak is still its run [3].
    await page.notebook.runCell(PREDS_CELL);
    const cell = (await page.notebook.getCellLocator(PREDS_CELL))!;
    await expect(cell.locator('.jp-InputArea-prompt')).toHaveText('[6]:');
    await expect(cell.locator(':scope > .jp-CudaMemdiffBadge')).toHaveText('recording already replayed');
    await page.evaluate(id => window.jupyterapp.commands.execute(id), COMMAND);

    const leaking = page.locator(LEAKING);
    await expect(leaking).toHaveAttribute('data-windowed-list-index', String(PREDS_CELL));
    await expect(leaking).toBeInViewport();
    const status = page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`);
    const total = JSON.parse(fs.readFileSync(path.resolve(__dirname, 'notebooks', NOTEBOOK), 'utf-8')).cells.length;
    const position = `cell ${PREDS_CELL + 1}/${total}`; // as the status bar says "Cell 5/48"
    await expect(status).toContainText(
      `Look at the highlighted cell first (preds = [], ${position}): its run [3], before the one its prompt shows now, [6].`
    );
    await expect(status).toBeInViewport();
    const top = page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`);
    await expect(top.locator('.jp-CudaMemdiffLeak-earlier')).toHaveText('an earlier run: the cell shows [6] now');
    await expect(top.locator('.jp-CudaMemdiffLeak-earlier')).toBeVisible();
    await page.screenshot({ path: test.info().outputPath('leaks-earlier-run.png') });
  });

  test('after Clear Outputs of All Cells, says once that no cell shows a count, not beside every entry', async ({
    page
  }) => {
    test.setTimeout(180000);
    await runReplayedDemo(page);
    // What a person does to tidy a notebook (and what reopening one saved without outputs looks like).
    await page.evaluate(() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs'));
    const cell = (await page.notebook.getCellLocator(PREDS_CELL))!;
    await expect(cell.locator('.jp-InputArea-prompt')).toHaveText('[ ]:');
    await page.evaluate(id => window.jupyterapp.commands.execute(id), COMMAND);

    const note = page.locator(`${PANEL} .jp-CudaMemdiffLeaks-fine`).first();
    await expect(note).toHaveText(
      'No cell shows a count now (its outputs were cleared, or the notebook was opened without them): each entry ' +
        'names its run as the chart does; a click on it highlights its cell.'
    );
    await expect(note).toBeInViewport();
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeak`).first()).toBeVisible();
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeak-earlier`)).toHaveCount(0);
    await expect(page.locator(LEAKING)).toHaveAttribute('data-windowed-list-index', String(PREDS_CELL));
  });

  test('after a `del preds` the recording never saw, does not say the kernel confirms the holders now', async ({
    page
  }) => {
    test.setTimeout(180000);
    await runReplayedDemo(page);
    // The user follows the advice; the replay answers that this cell is not in the recording.
    await page.notebook.addCell('code', 'del preds');
    const added = (await page.notebook.getCellCount()) - 1;
    await page.notebook.runCell(added);
    await expect((await page.notebook.getCellLocator(added))!.locator(':scope > .jp-CudaMemdiffBadge')).toHaveText(
      'not in the recording'
    );
    await page.evaluate(id => window.jupyterapp.commands.execute(id), COMMAND);

    const top = page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`);
    await expect(top).toContainText(
      'Confirmed by the kernel when the session was recorded: 256 MiB held only by autograd graph of preds[0:8]'
    );
    await expect(top).not.toContainText('Confirmed by the kernel:');
    await expect(top).toBeInViewport();
  });

  test('outlines the leaking cell while it is the active, focused cell, in the light and dark themes', async ({
    page
  }) => {
    test.setTimeout(180000);
    await runReplayedDemo(page);
    for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
      await setTheme(page, theme);
      // From the keyboard, as a person runs it from the palette, then goes to the cell it names from the panel:
      // the notebook takes the focus back, and its active cell shows JupyterLab's focus ring.
      await page.notebook.selectCells(0);
      await page.keyboard.press('Control+Shift+c');
      await page.locator('#command-palette input').fill('Find Leaking Cell');
      await page.keyboard.press('Enter');
      const top = page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`);
      await top.locator('.jp-CudaMemdiffLeak-cell').focus();
      await page.keyboard.press('Enter');
      const leaking = page.locator(LEAKING);
      await expect(leaking).toHaveAttribute('data-windowed-list-index', String(PREDS_CELL));
      await expect(leaking).toHaveClass(/jp-mod-active/);
      await expect.poll(() => leaking.evaluate(el => el.matches(':focus-visible'))).toBe(true);
      await page.mouse.move(0, 0);
      // The outline, drawn in the theme's error colour, over JupyterLab's own mark of the active cell.
      const drawn = await leaking.evaluate(el => {
        const probe = document.createElement('span');
        probe.style.color = 'var(--jp-error-color1)';
        document.body.appendChild(probe);
        const error = getComputedStyle(probe).color;
        probe.remove();
        const style = getComputedStyle(el);
        return { style: style.outlineStyle, width: parseFloat(style.outlineWidth), color: style.outlineColor, error };
      });
      expect(drawn.style, theme).toBe('solid');
      expect(drawn.width, theme).toBeGreaterThanOrEqual(2);
      expect(drawn.color, theme).toBe(drawn.error);
      await leaking.screenshot({ path: test.info().outputPath(`active-${theme.split(' ')[1]}.png`) });
    }
  });

  test('runs from the palette and the panel toolbar, and explains an empty notebook', async ({ page }) => {
    test.setTimeout(180000);
    // before any cell ran there is nothing to rank, and it says so
    await page.evaluate(id => window.jupyterapp.commands.execute(id), COMMAND);
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeaks-status`)).toContainText('run some cells first');

    await runReplayedDemo(page);
    await page.keyboard.press('Control+Shift+c');
    await page.locator('#command-palette input').fill('Find Leaking Cell');
    await page.locator('#command-palette .lm-CommandPalette-item', { hasText: 'Find Leaking Cell' }).click();
    await expect(page.locator(LEAKING)).toHaveAttribute('data-windowed-list-index', String(PREDS_CELL));

    // scroll away, then jump back from the panel toolbar
    await page.notebook.selectCells(0);
    await page.locator(`${PANEL} .jp-SidePanel-toolbar [data-command="${COMMAND}"]`).click();
    await expect(page.locator(LEAKING)).toHaveCount(1);
    await expect(page.locator('.jp-Cell.jp-mod-active')).toHaveAttribute(
      'data-windowed-list-index',
      String(PREDS_CELL)
    );
  });
});
