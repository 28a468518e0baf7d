/**
 * After a restart, execution counts start again: kernel 1's Cell [1] and
 * kernel 2's Cell [1] are both in the session. Wherever the panel and the
 * badges name a cell's run (the chart, the pickers, the diff's sites, the
 * OOM post-mortem, the leak finder, the badge's tooltip) a person can tell
 * which kernel's run it is, and the chart's marks stay legible.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import {
  BADGE,
  CODE_CELLS,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  PANEL,
  panelSection,
  restartKernel,
  runReplayedDemo
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

/** Where the screenshots go: looked at by hand, not compared. */
const SHOTS = process.env.RESTART_NAMES_SHOTS ?? '/tmp/hA-shots';

const OOM_RECORDING = path.resolve(__dirname, '../../test-data/recordings/oom--python/manifest.json');
const OOM_SOURCES: string[] = JSON.parse(fs.readFileSync(OOM_RECORDING, 'utf-8')).cells.map((c: any) => c.source);

type Page = Parameters<Parameters<typeof test>[2]>[0]['page'];

function chartOf(page: Page) {
  return panelSection(page, 'chart').getByRole('listbox', { name: 'Cells' });
}

async function waitForReplay(page: Page): Promise<void> {
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
    timeout: 60000
  });
}

/** The texts of the diff's allocation sites that name a notebook cell. */
async function cellSites(page: Page): Promise<string[]> {
  const labels = await panelSection(page, 'diff').locator('.jp-CudaMemdiffSite-label').allTextContents();
  return labels.filter(l => l.startsWith('Cell '));
}

/** Whether two drawn boxes overlap. */
async function overlap(a: Locator, b: Locator): Promise<boolean> {
  const [p, q] = [(await a.boundingBox())!, (await b.boundingBox())!];
  return p.x < q.x + q.width && q.x < p.x + p.width && p.y < q.y + q.height && q.y < p.y + p.height;
}

test('a frame names the run that made it, in its own kernel, as the chart and the pickers do', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(300000);
  // Kernel 1 runs the demo ([1] to [4]). Kernel 2 makes the model ([1]), runs that cell again ([2]: the
  // replay has no second run of it, so no snapshot) and makes the batches as [3], where kernel 1 had [2].
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  await restartKernel(page);
  await waitForReplay(page);
  for (const cell of [CODE_CELLS[0], CODE_CELLS[0], CODE_CELLS[1]]) {
    await page.notebook.runCell(cell);
  }
  const panel = await openPanel(page);
  const chart = chartOf(page);
  await expect(chart.getByRole('option')).toHaveCount(CODE_CELLS.length + 2, { timeout: 60000 });
  const caption = page.locator(`${PANEL} .jp-CudaMemdiffDiff-caption`);
  await panel.screenshot({ path: `${SHOTS}/restart-latest.png` });

  // Kernel 2's batches: the chart, the caption and the frames all name kernel 2's [3].
  await expect
    .soft(chart.getByRole('option', { selected: true }))
    .toHaveAccessibleName(/^\[3\] in kernel 2: batches = /);
  await expect.soft(caption).toHaveText(/^Cell \[3\] in kernel 2: batches = .*, against Cell \[1\] in kernel 2: /);
  expect.soft(await cellSites(page)).toEqual(['Cell [3] in kernel 2, line 1']);

  // Kernel 1's batches, [2] there: its frames name that run, not the cell's latest ([3] in kernel 2).
  await chart.getByRole('option', { name: /^\[2\] .*kernel 1.* batches/ }).click();
  await expect.soft(caption).toHaveText(/^Cell \[2\] in kernel 1: batches = .*, against Cell \[1\] in kernel 1: /);
  await panel.screenshot({ path: `${SHOTS}/restart-kernel1.png` });
  expect.soft(await cellSites(page)).toEqual(['Cell [2] in kernel 1, line 1']);
  // The pickers: each run names its kernel, no two alike.
  const options = await panel.locator('[data-cuda-memdiff-side="after"] option').allTextContents();
  expect(options.filter(o => o.startsWith('['))).toHaveLength(CODE_CELLS.length + 2);
  expect(new Set(options).size).toBe(options.length);
  expect.soft(options.filter(o => o.startsWith('[1] in kernel '))).toHaveLength(2);

  // The leak finder ranks kernel 2's runs, named as the chart beside it names them.
  // (nothing leaks there: each run is listed, none on top)
  await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:find-leaking-cell'));
  const rows = panel.locator('.jp-CudaMemdiffLeak-cell');
  await expect(rows).toHaveCount(2);
  await rows.first().scrollIntoViewIfNeeded();
  await panel.screenshot({ path: `${SHOTS}/restart-leaks.png` });
  const ranked = await rows.allTextContents();
  for (const name of ranked) {
    expect.soft(name).toMatch(/^Cell \[\d\] in kernel 2$/);
  }
});

test('the first cell run after a restart still says what made its peak, in its badge and in the panel', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(300000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const badge = (await page.notebook.getCellLocator(CODE_CELLS[0]))!.locator(`:scope > ${BADGE}`);
  await expect(badge).toHaveAttribute('title', /\nAt peak \(128 MiB\): 128 MiB from Cell \[1\], line 4\./);
  await restartKernel(page);
  await waitForReplay(page);
  await page.notebook.runCell(CODE_CELLS[0]);
  await expect(badge).not.toHaveClass(/jp-CudaMemdiffBadge-stale/, { timeout: 60000 });
  await expect(badge).toBeInViewport();
  // Kernel 2's [1] started from an empty device, as kernel 1's did: its peak is told as that one's was.
  await expect(badge).toHaveAttribute('title', /\nAt peak \(128 MiB\): 128 MiB from Cell \[1\] in kernel 2, line 4\./);
  await badge.hover();
  await page.screenshot({ path: `${SHOTS}/restart-peak-badge.png` });
  const panel = await openPanel(page);
  const peak = panelSection(page, 'peak');
  await expect(peak.locator('.jp-CudaMemdiffSection-title')).toHaveText('Peak of Cell [1] in kernel 2');
  await peak.getByRole('button', { name: 'Peak of Cell [1] in kernel 2' }).click();
  const summary = peak.locator('.jp-CudaMemdiffMoment-summary');
  await expect(summary).toHaveText('At its peak the cell had 128 MiB allocated.');
  await summary.scrollIntoViewIfNeeded();
  expect(await isInsideVisiblePanel(page, summary)).toBe(true);
  await panel.screenshot({ path: `${SHOTS}/restart-peak-panel.png` });
});

test('an OOM after a restart names whose memory filled the device, and the chart keeps its marks apart', async ({
  page
}) => {
  test.setTimeout(300000);
  // Kernel 1: [1] holds 100 GiB, [2] runs out of memory. After a restart only the failing cell runs, as
  // kernel 2's [1]; its replay holds the 100 GiB that kernel 1's [1] made.
  await page.notebook.createNew('oom.ipynb', { kernel: 'cuda-memdiff-replay-oom' });
  await waitForReplay(page);
  await page.notebook.setCell(0, 'code', OOM_SOURCES[0]);
  await page.notebook.addCell('code', OOM_SOURCES[1]);
  for (const k of [0, 1]) {
    await page.notebook.runCell(k);
  }
  const badge = (await page.notebook.getCellLocator(1))!.locator(`:scope > ${BADGE}`);
  await expect(badge).toHaveAttribute('data-level', 'oom', { timeout: 60000 });
  await restartKernel(page);
  await waitForReplay(page);
  await page.notebook.runCell(1);
  const panel = await openPanel(page);
  await expect(chartOf(page).getByRole('option')).toHaveCount(3, { timeout: 60000 });
  await expect(badge).not.toHaveClass(/jp-CudaMemdiffBadge-stale/);
  await panel.screenshot({ path: `${SHOTS}/oom-restart.png` });

  // The post-mortem and the badge: the failing run is kernel 2's [1], the holder kernel 1's [1].
  const oom = panelSection(page, 'oom');
  await expect.soft(oom.locator('.jp-CudaMemdiffSection-title')).toHaveText('Out of memory in Cell [1] in kernel 2');
  await expect
    .soft(oom.locator('[data-cuda-memdiff-holders="cell"] tbody tr').first())
    .toHaveText('100 GiBCell [1] in kernel 1');
  await expect.soft(badge).toHaveAttribute('title', /The device held: 100 GiB from Cell \[1\] in kernel 1, line 3\./);

  // The first cell after the restart ran out of memory: its OOM mark and the restart's label both show.
  const chart = panelSection(page, 'chart');
  await chart.screenshot({ path: `${SHOTS}/oom-restart-chart.png` });
  const marks = chart.locator('.jp-CudaMemdiffChart-oom');
  await expect(marks).toHaveCount(2);
  const restart = chart.locator('.jp-CudaMemdiffChart-restart text');
  await expect(restart).toHaveText('restart');
  for (const mark of await marks.all()) {
    await expect(mark).toHaveText('OOM');
    expect.soft(await overlap(mark, restart), 'an OOM label runs into the restart label').toBe(false);
  }
});
