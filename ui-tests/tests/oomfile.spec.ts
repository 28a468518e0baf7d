import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';
import {
  contrastOf,
  dropOnPanel,
  isInsidePanelBox,
  isInsideVisiblePanel,
  linesOfText,
  openPanel,
  openSnapshotFile,
  PANEL,
  panelSection,
  setTheme
} from './demo';

// A snapshot file written at an out-of-memory error (the H200 recording's
// OOM snapshot: 5 x 20 GiB held, 60 GiB asked for), opened as a person opens
// it: the post-mortem is the first thing its view shows, in the panel's
// words, with the holder named by the cell of the open notebook whose code
// allocated it.
const REC = path.join(__dirname, '..', '..', 'test-data', 'recordings', 'oom--python');

/** Open a notebook of the recording's cells (not run): the holders' frames are named by them. */
async function openRecordedNotebook(page: IJupyterLabPageFixture, tmpPath: string): Promise<void> {
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
}

/** The holder row both views show: the first cell's code, run by the process that wrote the dump. */
const HOLDER =
  /^100\sGiB<module>\s\(\/tmp\/ipykernel_\d+\/\d+\.py:3;\ssame\scode\sas\sCell\s1\/3,\srun\sby\sanother\sprocess\)$/;

test('an OOM dump opens on its post-mortem', async ({ page, tmpPath }) => {
  await openRecordedNotebook(page, tmpPath);
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
  // The file's frame is the first cell's code, run by the process that wrote the dump, not by this notebook's
  // kernel: it keeps its file name and says which cell it resembles, by place, as the status bar names cells.
  // (\s: a size keeps its unit on its line with a no-break space.)
  await expect(oom.locator('[data-cuda-memdiff-holders="site"] tbody tr')).toHaveText([HOLDER]);
  await expect(
    oom.getByRole('table', { name: 'What filled the device, by site' }).getByRole('columnheader')
  ).toHaveText(['Memory', 'Allocated at']);

  // Its timeline says only what it draws: this dump marks no cell boundary, so no dashed line is named.
  const timeline = view.locator('.jp-CudaMemdiffTimeline');
  await expect(timeline.locator('.jp-CudaMemdiffTimeline-boundary')).toHaveCount(0);
  await expect(timeline.locator('.jp-CudaMemdiffTimeline-caption')).toHaveText(
    'Allocated memory on cuda:0 over 5 allocations and frees (peak 100 GiB). Click a moment, then another, to see what changed between them (or move with the arrow keys and press Enter at each). The red line is where an allocation of 60.0 GiB failed: out of memory.'
  );
  // The failed allocation is marked where it happened, after the last moment: at the drawing's right edge, inside it.
  const failed = timeline.locator('.jp-CudaMemdiffTimeline-oom');
  await expect(failed).toHaveCount(1);
  const mark = (await failed.boundingBox())!;
  const drawing = (await timeline.locator('.jp-CudaMemdiffTimeline-chart').boundingBox())!;
  expect(mark.x).toBeGreaterThan(drawing.x + drawing.width - 4);
  expect(mark.x + mark.width).toBeLessThanOrEqual(drawing.x + drawing.width + 0.5);
  expect(mark.height).toBeGreaterThan(drawing.height - 2);
  await expect(timeline).not.toContainText('top of the chart');
  // A scale to read it by: round sizes beside the drawing, each at the height of its grid line, in sight.
  const ticks = timeline.locator('.jp-CudaMemdiffTimeline-tick');
  await expect(ticks).toHaveText(['0 B', '32 GiB', '64 GiB', '96 GiB']);
  const grid = timeline.locator('.jp-CudaMemdiffTimeline-grid');
  await expect(grid).toHaveCount(4);
  await timeline.locator('.jp-CudaMemdiffTimeline-plot').scrollIntoViewIfNeeded();
  const chartBox = (await timeline.locator('.jp-CudaMemdiffTimeline-chart').boundingBox())!;
  for (let k = 0; k < 4; k++) {
    await expect(ticks.nth(k)).toBeInViewport({ ratio: 1 });
    const label = (await ticks.nth(k).boundingBox())!;
    const line = (await grid.nth(k).boundingBox())!;
    expect(Math.abs(label.y + label.height / 2 - (line.y + line.height / 2)), `tick ${k}`).toBeLessThan(2);
    // left of the drawing, never over it
    expect(label.x + label.width).toBeLessThanOrEqual(chartBox.x);
  }
  await expect(timeline.locator('.jp-CudaMemdiffTimeline-xAxis span')).toHaveText(['moment 1', 'moment 5']);
  await page.mouse.move(0, 0);
  await timeline.screenshot({ path: test.info().outputPath('oom-timeline-light.png') });

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    await setTheme(page, theme);
    const { violations, checked } = await contrastOf(page, ['.jp-CudaMemdiffFile-oom', '.jp-CudaMemdiffTimeline']);
    expect(violations, theme).toEqual([]);
    expect(checked, theme).toBeGreaterThan(5);
  }
  await timeline.screenshot({ path: test.info().outputPath('oom-timeline-dark.png') });
});

// The same dump dropped on the panel, as a new user first tried it: the
// panel opens on the same post-mortem, in sight without scrolling, above the
// diff it compares; a file that cannot be read then is named in one line and
// the post-mortem stays.
test('an OOM dump dropped on the panel opens on its post-mortem', async ({ page, tmpPath }) => {
  test.setTimeout(120000);
  await openRecordedNotebook(page, tmpPath);
  await page.contents.uploadFile(path.join(REC, 'oom00.pickle.gz'), `${tmpPath}/oom00.pickle.gz`);
  await page.contents.uploadContent('not a pickle', 'text', `${tmpPath}/notes.pickle`);
  const panel = await openPanel(page);
  await dropOnPanel(page, [`${tmpPath}/oom00.pickle.gz`]);

  const summary = panel.getByText('It asked for 60.0 GiB on cuda:0; the device had 39.3 GiB free.');
  await expect(summary).toBeVisible({ timeout: 60000 });
  await expect(panel.getByRole('heading', { name: 'Out of memory in file oom00.pickle.gz' })).toBeVisible();
  const facts = panel.locator('.jp-CudaMemdiffMoment-facts');
  await expect(facts).toHaveText(
    "Requested60.0 GiBFree on the device39.3 GiBFree in PyTorch's segments0 BLargest free block0 B"
  );
  const holders = panel.locator('[data-cuda-memdiff-holders="site"] tbody tr');
  await expect(holders).toHaveText([HOLDER]);
  // In the 250 px panel the holder's path wraps after a slash, never inside the file's name (it read as two numbers).
  const fileName = /\/(\d+\.py):3/.exec((await holders.first().textContent())!)![1];
  expect(await linesOfText(holders.first(), fileName)).toBe(1);
  await page.screenshot({ path: test.info().outputPath('dropped-oom.png') });
  // Where a person looks: inside the part of the panel that shows, with no scrolling, and before the diff.
  for (const seen of [summary, facts, holders.first()]) {
    await expect.poll(() => isInsideVisiblePanel(page, seen)).toBe(true);
  }
  const diffHeading = panelSection(page, 'diff').getByRole('heading');
  expect((await summary.boundingBox())!.y).toBeLessThan((await diffHeading.boundingBox())!.y);
  const { violations, checked } = await contrastOf(page, [`${PANEL} [data-cuda-memdiff-section="fileOom"]`]);
  expect(violations).toEqual([]);
  expect(checked).toBeGreaterThan(5);

  // Bad input: one line that says why, and the post-mortem is still there.
  await dropOnPanel(page, [`${tmpPath}/notes.pickle`]);
  const error = panel.locator('.jp-CudaMemdiffPanel-error');
  await expect(error).toContainText('Cannot read notes.pickle: ');
  expect(await isInsidePanelBox(page, error)).toBe(true);
  await expect(summary).toBeVisible();
  await expect(holders).toHaveText([HOLDER]);
});
