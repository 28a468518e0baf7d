/**
 * The panel's fit, as a person sees it: what an action reveals starts at the
 * top of the panel with no sticky heading over it, a narrow panel never
 * scrolls sideways as a whole (the blocks table fits it), the
 * panel names cells as "Cell [N]" everywhere, and the peak of a cell is shown
 * only while the diff shows that cell.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import * as path from 'path';
import {
  CODE_CELLS,
  isInsideVisiblePanel,
  isUncovered,
  openPanel,
  openReplayedDemo,
  openSnapshotFile,
  PANEL,
  PANEL_CONTENT,
  panelSection,
  restartKernel,
  revealSection,
  runReplayedDemo,
  setPanelWidth,
  topInPanel
} from './demo';

const FILE = path.resolve(__dirname, '../../test-data/recordings/eval_without_no_grad--python/cell02.pickle.gz');
const HEAD = '.jp-CudaMemdiffSection-head';

test.describe('revealing a section', () => {
  // Tall enough that what follows the diff is shorter than the panel.
  test.use({ viewport: { width: 1280, height: 1000 } });

  test('puts its heading at the top of the panel, with no other heading over what follows', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
    await openSnapshotFile(page, FILE, tmpPath);
    const panel = page.locator(PANEL);
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f0');

    const diff = panelSection(page, 'diff');
    const chartHead = panelSection(page, 'chart').locator(HEAD);
    await expect.poll(() => topInPanel(page, diff.locator(HEAD))).toBe(0);
    // "Memory after each cell" is out of sight, not stuck over the top of its chart
    const content = (await page.locator(PANEL_CONTENT).boundingBox())!;
    const chartHeadBox = (await chartHead.boundingBox())!;
    expect(chartHeadBox.y + chartHeadBox.height).toBeLessThanOrEqual(content.y + 1);
    expect(await isUncovered(diff.locator(HEAD))).toBe(true);
    expect(await isUncovered(diff.locator('.jp-CudaMemdiffCompare label').first())).toBe(true);
    await page.screenshot({ path: test.info().outputPath('file-revealed.png') });

    // Every section, the last ones too: its heading at the top, the start of its body in sight below it.
    for (const name of ['leaks', 'chart', 'diff', 'segments']) {
      const section = panelSection(page, name);
      if (!(await section.count())) {
        continue; // the leak finder's section shows once it has run
      }
      await revealSection(page, name);
      await expect.poll(() => topInPanel(page, section.locator(HEAD)), `section ${name} at the top`).toBe(0);
      expect(await isUncovered(section.locator(HEAD)), `heading of ${name} uncovered`).toBe(true);
      const first = section.locator('.jp-CudaMemdiffSection-body > *').first();
      expect(await isUncovered(first), `start of ${name} uncovered`).toBe(true);
      expect(await isInsideVisiblePanel(page, section.locator(HEAD))).toBe(true);
    }
    await page.screenshot({ path: test.info().outputPath('segments-revealed.png') });

    // The blank space that let the segment map reach the top goes once the user scrolls back up.
    const scroller = page.locator(PANEL_CONTENT);
    await scroller.focus();
    await page.keyboard.press('Home');
    await expect.poll(() => scroller.evaluate(el => el.scrollTop)).toBe(0);
    await page.keyboard.press('End');
    const last = panel.locator('.jp-CudaMemdiffSection').last();
    await expect.poll(() => isInsideVisiblePanel(page, last)).toBe(true);
    const lastBox = (await last.boundingBox())!;
    const contentBox = (await scroller.boundingBox())!;
    // only the content's own bottom padding below the last section
    expect(contentBox.y + contentBox.height - (lastBox.y + lastBox.height)).toBeLessThan(12);
  });

  test('in a panel taller than its sections, opening a file shows no part of the chart under a heading', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
    // Wide: the sections that follow the diff are much shorter than the panel, as the first user met them.
    await setPanelWidth(page, 480);
    const panel = page.locator(PANEL);
    const content = page.locator(PANEL_CONTENT);
    const diff = panelSection(page, 'diff');
    const chart = panelSection(page, 'chart');
    const REC = path.resolve(__dirname, '../../test-data/recordings');
    const files = [
      path.join(REC, 'oom--python', 'oom00.pickle.gz'),
      path.join(REC, 'clean_training--python', 'cell04.pickle.gz')
    ];
    for (const [k, file] of files.entries()) {
      await openSnapshotFile(page, file, tmpPath);
      await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue(`f${k}`);
      // An OOM dump opens on its post-mortem, just above its diff; another file on its diff.
      const opening = k === 0 ? panelSection(page, 'fileOom') : diff;
      await expect.poll(() => topInPanel(page, opening.locator(HEAD)), path.basename(file)).toBe(0);
      // The chart is wholly above the panel's top: none of it (lines, legend) shows under its sticky heading.
      const contentBox = (await content.boundingBox())!;
      const chartBox = (await chart.boundingBox())!;
      expect(chartBox.y + chartBox.height, path.basename(file)).toBeLessThanOrEqual(contentBox.y + 1);
      expect(await isUncovered(opening.locator(HEAD))).toBe(true);
      const picker = diff.locator('.jp-CudaMemdiffCompare label').first();
      await picker.scrollIntoViewIfNeeded();
      expect(await isUncovered(picker)).toBe(true);
      await page.screenshot({ path: test.info().outputPath(`wide-${k}.png`) });
    }
  });
});

test.describe('a narrow panel', () => {
  test.use({ viewport: { width: 1280, height: 720 } });

  test('never scrolls sideways as a whole; the blocks table fits it', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
    await setPanelWidth(page, 250);
    const panel = page.locator(PANEL);
    const site = panel.locator('.jp-CudaMemdiffSite').first();
    await site.locator('.jp-CudaMemdiffSite-head').click();
    const content = page.locator(PANEL_CONTENT);

    // The stack's source line wraps inside the panel.
    const source = site.locator('.jp-CudaMemdiffStack-source').first();
    await expect(source).toHaveText('clean = [model(b) for b in batches]');
    await source.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, source)).toBe(true);
    // Nothing makes the whole panel wider than itself, and it cannot be pushed sideways.
    const sizes = await content.evaluate(el => ({ scroll: el.scrollWidth, client: el.clientWidth }));
    expect(sizes.scroll).toBeLessThanOrEqual(sizes.client);
    await content.evaluate(el => (el.scrollLeft = 1000));
    expect(await content.evaluate(el => el.scrollLeft)).toBe(0);

    // The blocks table fits the panel: every column in sight, none behind a sideways scroll.
    const table = site.getByRole('table', { name: 'Blocks born' });
    await table.scrollIntoViewIfNeeded();
    const tableBox = (await table.boundingBox())!;
    const panelBox = (await panel.boundingBox())!;
    expect(tableBox.x + tableBox.width).toBeLessThanOrEqual(panelBox.x + panelBox.width);
    for (const name of ['Address', 'Size', 'Requested', 'State']) {
      const header = table.getByRole('columnheader', { name });
      expect(await isInsideVisiblePanel(page, header), name).toBe(true);
      expect(await isUncovered(header), name).toBe(true);
    }
    // nothing between the table and the panel scrolls sideways to show it
    const scrolled = await table.evaluate(el => {
      const wider: string[] = [];
      for (let e = el.parentElement; e && !e.classList.contains('jp-CudaMemdiffPanel-content'); e = e.parentElement) {
        if (e.scrollWidth > e.clientWidth) {
          wider.push(e.className);
        }
      }
      return wider;
    });
    expect(scrolled).toEqual([]);
    const row = table.getByRole('row').nth(1);
    const stateCell = row.getByRole('cell').last();
    await expect(stateCell).toHaveText('allocated');
    await expect(stateCell).toHaveAttribute('title', "torch's block state: active_allocated");
    expect(await isInsideVisiblePanel(page, stateCell)).toBe(true);
    // each figure whole on its line: a size is not cut between its number and its unit
    const size = row.getByRole('cell').nth(1);
    await expect(size).toHaveText(/^\d[\d.]* [KMG]?i?B$/);
    const lines = (cell: Locator) =>
      cell.evaluate(el => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
      });
    expect(await lines(size)).toBe(1);
    expect(await lines(stateCell)).toBe(1);
    expect(await content.evaluate(el => el.scrollLeft)).toBe(0);
    await page.screenshot({ path: test.info().outputPath('narrow-blocks.png') });
  });
});

test.describe('the peak list at the least width', () => {
  test.use({ viewport: { width: 1280, height: 720 } });

  test('keeps each size and each "line N" on one line', async ({ page, tmpPath }) => {
    test.setTimeout(240000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
    // After a restart the sites read "Cell [3] in kernel 2, line 3": long enough to wrap at 250 px.
    await restartKernel(page);
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.run();
    await expect(panelSection(page, 'chart').getByRole('option')).toHaveCount(2 * CODE_CELLS.length, {
      timeout: 60000
    });
    await setPanelWidth(page, 250);
    const peak = panelSection(page, 'peak');
    const toggle = peak.getByRole('button', { name: 'Peak of Cell [4] in kernel 2' });
    await toggle.scrollIntoViewIfNeeded();
    await toggle.click();
    const rows = peak.locator('[data-cuda-memdiff-holders="site"] tbody tr');
    await expect(rows).toHaveText([
      '321 MiBCell [3] in kernel 2, line 3',
      '128 MiBCell [1] in kernel 2, line 4',
      '60.0 MiBCell [4] in kernel 2, line 2',
      '32.0 MiBCell [2] in kernel 2, line 1'
    ]);
    for (const row of await rows.all()) {
      await row.scrollIntoViewIfNeeded();
      expect(await isInsideVisiblePanel(page, row)).toBe(true);
      // How many lines the size, and the label's "line N", are drawn on.
      const lines = await row.evaluate((tr: HTMLTableRowElement) => {
        const linesOf = (node: Node, from: number, to: number) => {
          const range = document.createRange();
          range.setStart(node, from);
          range.setEnd(node, to);
          return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
        };
        const bytes = tr.cells[0].firstChild!;
        const label = tr.cells[1].firstChild!;
        const at = /line\s\d+/.exec(label.textContent!)!;
        return {
          size: linesOf(bytes, 0, bytes.textContent!.length),
          lineN: linesOf(label, at.index, at.index + at[0].length)
        };
      });
      expect(lines, (await row.textContent()) ?? '').toEqual({ size: 1, lineN: 1 });
    }
    await peak.screenshot({ path: test.info().outputPath('narrow-peak.png') });
  });
});

test.describe('the peak section', () => {
  test.use({ viewport: { width: 1280, height: 720 } });

  test.beforeEach(async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
  });

  test('names cells as the badges and the leak finder do: "Cell [N]"', async ({ page }) => {
    test.setTimeout(180000);
    const panel = await openPanel(page);
    await expect(panel.locator('.jp-CudaMemdiffDiff-caption').first()).toHaveText(
      'Cell [4] with torch.no_grad(), against Cell [3] preds = []'
    );
    const peak = panelSection(page, 'peak');
    const toggle = peak.getByRole('button', { name: 'Peak of Cell [4]' });
    await toggle.scrollIntoViewIfNeeded();
    await toggle.click();
    const bySite = peak.locator('[data-cuda-memdiff-holders="site"] tbody tr');
    await expect(bySite).toHaveText([
      '321 MiBCell [3], line 3',
      '128 MiBCell [1], line 4',
      '60.0 MiBCell [4], line 2',
      '32.0 MiBCell [2], line 1'
    ]);
    await bySite.first().scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, bySite.first())).toBe(true);
    // nowhere in the panel a cell named in lower case
    await expect(panel).not.toContainText(/\bcell \[/);
  });

  test('is not shown while the diff shows a file, and comes back with the cell', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    const panel = await openPanel(page);
    const peak = panelSection(page, 'peak');
    await expect(peak.locator('.jp-CudaMemdiffSection-title')).toHaveText('Peak of Cell [4]');

    await openSnapshotFile(page, FILE, tmpPath);
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f0');
    await expect(panel.locator('.jp-CudaMemdiffDiff-caption')).toHaveText(
      'file cell02.pickle.gz, against an empty device'
    );
    await expect(peak).toHaveCount(0);
    await expect(panel).not.toContainText('Peak of');

    // Comparing two cells: the peak is the later one's, the one the diff shows.
    await panel.locator('[data-cuda-memdiff-side="after"]').selectOption('r1');
    await expect(panel.locator('.jp-CudaMemdiffDiff-caption').first()).toHaveText(/^Cell \[2\] batches/);
    await expect(peak.locator('.jp-CudaMemdiffSection-title')).toHaveText('Peak of Cell [2]');

    await panel.getByRole('button', { name: 'Back to the selected cell' }).click();
    await expect(peak.locator('.jp-CudaMemdiffSection-title')).toHaveText('Peak of Cell [4]');
    await peak.locator(HEAD).scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, peak.locator(HEAD))).toBe(true);
    expect(await isUncovered(peak.locator(HEAD))).toBe(true);
  });
});
