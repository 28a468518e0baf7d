/**
 * The session chart as a person uses it on the replayed demo: the arrow keys
 * walk the cells one by one with the diff following, the highlight follows a
 * pair picked by hand, Run All after a restart takes the panel to the new
 * cells, and two restarts close together keep their labels apart.
 */
import { expect, test } from '@jupyterlab/galata';
import {
  accessibilityOf,
  CODE_CELLS,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  PANEL,
  panelSection,
  restartKernel,
  runReplayedDemo,
  setPanelWidth
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

const CAPTION = `${PANEL} .jp-CudaMemdiffDiff-caption`;

function chartOf(page: Parameters<Parameters<typeof test>[2]>[0]['page']) {
  return panelSection(page, 'chart').getByRole('listbox', { name: 'Cells' });
}

test('the arrow keys move the selection one cell per press, and the diff follows', async ({ page, tmpPath }) => {
  test.setTimeout(180000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  await openPanel(page);
  const chart = chartOf(page);
  await chart.getByRole('option', { name: /^\[1\] / }).click();
  await expect(chart.getByRole('option', { selected: true })).toHaveAccessibleName(/^\[1\] /);
  // What the hover says is each band's name, said once: no description repeating it.
  const bands = await accessibilityOf(page, `${PANEL} .jp-CudaMemdiffChart svg`, 'option');
  expect(bands.map(b => b.name)).toEqual(
    CODE_CELLS.map((_, k) => expect.stringMatching(`^\\[${k + 1}\\] .* allocated, `))
  );
  expect(bands.map(b => b.description)).toEqual(CODE_CELLS.map(() => ''));
  for (const cell of [2, 3, 4]) {
    await page.keyboard.press('ArrowRight');
    const selected = chart.getByRole('option', { selected: true });
    await expect(selected).toHaveAccessibleName(new RegExp(`^\\[${cell}\\] `));
    await expect(selected).toBeFocused();
    await expect(page.locator(CAPTION)).toHaveText(
      new RegExp(`^Cell \\[${cell}\\] .*, against Cell \\[${cell - 1}\\] `)
    );
  }
  await page.keyboard.press('ArrowLeft');
  await expect(chart.getByRole('option', { selected: true })).toHaveAccessibleName(/^\[3\] /);
  await page.keyboard.press('Home');
  await expect(chart.getByRole('option', { selected: true })).toHaveAccessibleName(/^\[1\] /);
  await expect(page.locator(CAPTION)).toHaveText(/^Cell \[1\] .*, against an empty device$/);
  await page.keyboard.press('End');
  await expect(chart.getByRole('option', { selected: true })).toHaveAccessibleName(/^\[4\] /);
  // one band in the tab order, the selected one
  await expect(chart.locator('[tabindex="0"]')).toHaveCount(1);
  await expect(chart.locator('[tabindex="0"]')).toHaveAttribute('aria-selected', 'true');
});

test('the chart highlights the pair picked by hand, and Run All after a restart shows the new cells', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(240000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const panel = await openPanel(page);
  const chart = chartOf(page);
  await chart.getByRole('option', { name: /^\[1\] / }).click();
  // Before [2], After [3] in the pickers
  await panel.locator('[data-cuda-memdiff-side="before"]').selectOption('r1');
  await panel.locator('[data-cuda-memdiff-side="after"]').selectOption('r2');
  await expect(page.locator(CAPTION)).toHaveText(/^Cell \[3\] .*, against Cell \[2\] /);
  const selected = chart.getByRole('option', { selected: true });
  await expect(selected).toHaveAccessibleName(/^\[3\] /);
  await expect(selected).toHaveClass(/jp-mod-selected/);
  const before = chart.getByRole('option', { name: /^\[2\] .*the diff compares against it$/ });
  await expect(before).toHaveClass(/jp-mod-compared/);
  await expect(chart.locator('.jp-mod-selected, .jp-mod-compared')).toHaveCount(2);
  await page.mouse.move(0, 0); // off band [1], which the click left hovered
  // drawn: the selected band is filled more strongly than the compared one, which is filled more than the rest
  const opacity = (band: typeof selected) => band.evaluate(el => Number(getComputedStyle(el).opacity));
  const fill = (band: typeof selected) => band.evaluate(el => getComputedStyle(el).fill);
  expect(await fill(before)).toBe(await fill(selected));
  expect(await opacity(selected)).toBeGreaterThan(await opacity(before));
  expect(await fill(chart.getByRole('option', { name: /^\[1\] / }))).toMatch(/rgba\(0, 0, 0, 0\)|transparent|none/);

  // Back on the chart (no pair picked by hand), then Restart Kernel and Run All: the new cells are shown.
  await chart.getByRole('option', { name: /^\[2\] / }).click();
  await restartKernel(page);
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', { timeout: 60000 });
  await page.notebook.run();
  await expect(chart.getByRole('option')).toHaveCount(2 * CODE_CELLS.length, { timeout: 60000 });
  await expect(chart.getByRole('option', { selected: true })).toHaveAccessibleName(/^\[4\] in kernel 2: /);
  await expect(panel.locator('[data-cuda-memdiff-side="after"] option:checked')).toHaveText(/^\[4\] in kernel 2: /);
  await expect(page.locator(CAPTION)).toHaveText(/^Cell \[4\] in kernel 2: .*, against Cell \[3\] in kernel 2: /);
});

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
  expect(titles[0]).toMatch(/^The kernel restarted before \[1\] in kernel 2: /);
  expect(titles[1]).toMatch(/^The kernel restarted before \[1\] in kernel 3: /);
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

test('each step is named under the chart by its prompt, thinned where names would touch; the session peak is marked', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(240000);
  await openReplayedDemo(page, tmpPath);
  await runReplayedDemo(page);
  const panel = await openPanel(page);
  const section = panelSection(page, 'chart');
  const names = section.locator('.jp-CudaMemdiffChart-cellLabels text');

  /** The names drawn, each with its box, and the boxes of the bands they name. */
  const drawn = async () => {
    const boxes = [];
    for (const name of await names.all()) {
      expect(await isInsideVisiblePanel(page, name), (await name.textContent()) ?? '').toBe(true);
      boxes.push({ text: (await name.textContent())!, box: (await name.boundingBox())! });
    }
    return boxes;
  };
  const apart = (boxes: { box: { x: number; width: number } }[]) =>
    boxes.slice(1).every((b, k) => b.box.x >= boxes[k].box.x + boxes[k].box.width);

  // Four cells, four names, each under its own band, below the plot's zero line, none touching.
  await expect(names).toHaveText(['[1]', '[2]', '[3]', '[4]']);
  const bands = chartOf(page).getByRole('option');
  const zero = (await section.locator('.jp-CudaMemdiffChart-tick line').first().boundingBox())!;
  const four = await drawn();
  for (let k = 0; k < 4; k++) {
    const band = (await bands.nth(k).boundingBox())!;
    const centre = four[k].box.x + four[k].box.width / 2;
    expect(centre).toBeGreaterThan(band.x);
    expect(centre).toBeLessThan(band.x + band.width);
    expect(four[k].box.y).toBeGreaterThanOrEqual(zero.y);
  }
  expect(apart(four)).toBe(true);

  // The peak the panel states in words, as a level above the 512 MiB tick (541 MiB), with its key.
  await expect(section.locator('.jp-CudaMemdiffPanel-sessionPeak')).toHaveText('Session peak: 541 MiB allocated');
  const peak = section.locator('line.jp-CudaMemdiffChart-peak');
  await expect(peak).toHaveCount(1);
  expect(await isInsideVisiblePanel(page, peak)).toBe(true);
  const tick512 = section.locator('.jp-CudaMemdiffChart-tick', { hasText: '512 MiB' }).locator('line');
  expect((await peak.boundingBox())!.y).toBeLessThan((await tick512.boundingBox())!.y);
  await expect(section.locator('.jp-CudaMemdiffChart-legend')).toContainText('session peak');
  await page.mouse.move(0, 0);
  await section.screenshot({ path: test.info().outputPath('chart-named.png') });

  // Three kernels' runs at the panel's least width: 12 steps of 13 px, too narrow for "[1]" each, so every
  // other one is named, still apart and inside the panel.
  for (let k = 2; k <= 3; k++) {
    await restartKernel(page);
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.run();
    await expect(bands).toHaveCount(k * CODE_CELLS.length, { timeout: 60000 });
  }
  await setPanelWidth(page, 250);
  await expect(names).toHaveText(['[1]', '[3]', '[1]', '[3]', '[1]', '[3]']);
  const thinned = await drawn();
  expect(apart(thinned)).toBe(true);
  // the peak now is kernel 3's: its level starts at kernel 3's first step, the last restart
  const restart = (await panel.locator('.jp-CudaMemdiffChart-restart line').last().boundingBox())!;
  expect(Math.abs((await peak.boundingBox())!.x - restart.x)).toBeLessThan(2);
  await page.mouse.move(0, 0);
  await section.screenshot({ path: test.info().outputPath('chart-narrow.png') });
});
