/**
 * The segment map as a new user follows it through the replayed demo at the
 * panel's default width: stepping through the chart with the arrow keys, a
 * cell's blocks keep one colour, after a page reload too, and coloured by
 * role, hovering a block names its role.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import {
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  panelSection,
  runReplayedDemo,
  setPanelWidth
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

/** The colour a person sees for each entry of the map's legend that names a cell, by its words. */
async function cellColours(legend: Locator): Promise<Record<string, string>> {
  const entries = await legend
    .locator('li')
    .evaluateAll(items =>
      items.map(li => [li.textContent ?? '', getComputedStyle(li.querySelector('span')!).backgroundColor])
    );
  return Object.fromEntries(entries.filter(([text]) => /^Cell \[\d\]$/.test(text)));
}

test.describe('the segment map at the default width', () => {
  test.beforeEach(async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
    await setPanelWidth(page, 250);
  });

  test('a cell keeps its colour as the arrow keys step through the chart', async ({ page }) => {
    test.setTimeout(180000);
    const cells = panelSection(page, 'chart').getByRole('listbox', { name: 'Cells' });
    const segments = panelSection(page, 'segments');
    const legend = segments.getByRole('list', { name: 'Colours of the segment map' });
    const map = segments.locator('svg');

    // [4]'s map: the model's weights (Cell [1]), the batches (Cell [2]) and the kept predictions (Cell [3])
    const last = cells.getByRole('option', { name: /^\[4\]/ });
    await last.click();
    await expect(last).toHaveAttribute('aria-selected', 'true');
    await expect(legend).toContainText('Cell [3]');
    const atFour = await cellColours(legend);
    expect(Object.keys(atFour)).toEqual(expect.arrayContaining(['Cell [1]', 'Cell [3]']));
    // the cells shown together are told apart
    expect(new Set(Object.values(atFour)).size).toBe(Object.keys(atFour).length);

    // two steps back, as a person does from the keyboard: [2]'s map has no Cell [3]
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    await expect(cells.getByRole('option', { name: /^\[2\]/ })).toHaveAttribute('aria-selected', 'true');
    await expect(legend).not.toContainText('Cell [3]');
    const atTwo = await cellColours(legend);
    expect(Object.keys(atTwo)).toEqual(expect.arrayContaining(['Cell [1]', 'Cell [2]']));
    expect(new Set(Object.values(atTwo)).size).toBe(Object.keys(atTwo).length);
    for (const cell of Object.keys(atTwo).filter(c => c in atFour)) {
      expect(atTwo[cell], `${cell} at [2] and at [4]`).toBe(atFour[cell]);
    }
    // and the map draws Cell [1]'s blocks in its legend's colour
    const fills = await map
      .locator('.jp-CudaMemdiffSegments-block')
      .evaluateAll(els => els.map(e => getComputedStyle(e).fill));
    expect(fills).toContain(atTwo['Cell [1]']);

    // back to [4] by the keyboard: the same colours again
    await page.keyboard.press('End');
    await expect(last).toHaveAttribute('aria-selected', 'true');
    await expect(legend).toContainText('Cell [3]');
    expect(await cellColours(legend)).toEqual(atFour);
  });

  test('a cell keeps its colour after a page reload, whichever snapshot is shown first', async ({ page }) => {
    test.setTimeout(240000);
    const cells = panelSection(page, 'chart').getByRole('listbox', { name: 'Cells' });
    const legend = panelSection(page, 'segments').getByRole('list', { name: 'Colours of the segment map' });
    const show = async (run: string, hasThree: boolean) => {
      const option = cells.getByRole('option', { name: new RegExp(`^\\[${run}\\]`) });
      await option.click();
      await expect(option).toHaveAttribute('aria-selected', 'true');
      // [4]'s map has the kept predictions (Cell [3]), [2]'s has not: the legend is the picked snapshot's
      await (hasThree ? expect(legend) : expect(legend).not).toContainText('Cell [3]');
      return cellColours(legend);
    };
    // [2]'s map, then [4]'s
    const atTwo = await show('2', false);
    const atFour = await show('4', true);
    expect(Object.keys(atTwo)).toEqual(expect.arrayContaining(['Cell [1]', 'Cell [2]']));
    expect(atFour['Cell [1]']).toBe(atTwo['Cell [1]']);

    // The browser's own reload: JupyterLab restores the notebook, and its kernel sends the snapshots again.
    await page.notebook.save();
    await page.evaluate(() => location.reload());
    await page.waitForFunction(() => (window as any).jupyterapp, null, { timeout: 60000 });
    await page.evaluate(() => window.jupyterapp.restored);
    await openPanel(page);
    await expect(cells.getByRole('option', { name: /^\[4\]/ })).toBeVisible({ timeout: 90000 });

    // now [4]'s map first: each cell in the colour it had before
    expect(await show('4', true)).toEqual(atFour);
    expect(await show('2', false)).toEqual(atTwo);
  });

  test("the keyboard reaches the blocks, rings the one it is on and shows each one's stack", async ({ page }) => {
    test.setTimeout(180000);
    const segments = panelSection(page, 'segments');
    // Tab from the button above the map lands on its first block
    const colour = segments.getByRole('button', { name: 'colour by role' });
    await colour.scrollIntoViewIfNeeded();
    await colour.focus();
    await page.keyboard.press('Tab');
    const focused = segments.getByRole('gridcell').and(page.locator(':focus'));
    await expect(focused).toHaveCount(1);
    expect(await isInsideVisiblePanel(page, focused)).toBe(true);
    // the ring a person sees: around the block, whole (inside the map's box), drawn after every row
    const ring = segments.locator('.jp-CudaMemdiffSegments-ring');
    const ringIsWhole = async () => {
      const r = (await ring.boundingBox())!;
      const b = (await focused.boundingBox())!;
      const box = (await segments.locator('.jp-CudaMemdiffSegments-rows').boundingBox())!;
      return (
        r.x < b.x &&
        r.y < b.y &&
        r.x + r.width > b.x + b.width &&
        r.y + r.height > b.y + b.height &&
        r.y >= box.y &&
        r.x >= box.x &&
        (await ring.evaluate(e => e.nextElementSibling === null)) &&
        (await isInsideVisiblePanel(page, ring))
      );
    };
    await expect(ring).toHaveCount(1);
    expect(await ringIsWhole()).toBe(true);

    // Enter shows its stack below the map; each arrow moves the ring and the stack on
    const detail = segments.locator('.jp-CudaMemdiffSegments-detail');
    await page.keyboard.press('Enter');
    await expect(detail).toContainText(/^Block \d[\d.]* [KMG]?i?B .*at 0x[0-9a-f]+/);
    await expect(detail.getByRole('button', { name: /^Cell \[\d\], line \d+$/ }).first()).toBeVisible();
    const seen = new Set([await detail.locator('p').first().textContent()]);
    for (const key of ['ArrowRight', 'ArrowRight', 'ArrowDown']) {
      const before = await focused.evaluate(e => e.getBoundingClientRect().toJSON());
      await page.keyboard.press(key);
      await expect(focused).toHaveCount(1);
      const after = await focused.evaluate(e => e.getBoundingClientRect().toJSON());
      expect(after, `${key} moves the ring`).not.toEqual(before);
      await expect(focused).toHaveAttribute('aria-selected', 'true');
      expect(await ringIsWhole(), `the ring after ${key}`).toBe(true);
      seen.add(await detail.locator('p').first().textContent());
    }
    // each block is named by its address: each step showed another block
    expect(seen.size).toBe(4);

    // a click picks too, and draws no keyboard ring
    await segments.getByRole('gridcell').first().click();
    await expect(ring).toHaveCount(0);
    await expect(segments.getByRole('gridcell').first()).toHaveAttribute('aria-selected', 'true');

    // another cell's snapshot: nothing is picked in it, and Tab comes back to its first block
    await panelSection(page, 'chart')
      .getByRole('listbox', { name: 'Cells' })
      .getByRole('option', { name: /^\[2\]/ })
      .click();
    await expect(segments.locator('[aria-selected="true"]')).toHaveCount(0);
    await expect(detail).toHaveCount(0);
    await expect(segments.locator('[role="gridcell"][tabindex="0"]')).toHaveCount(1);
    expect(
      await segments.getByRole('gridcell').first().getAttribute('tabindex'),
      'the first block is the one in the tab order'
    ).toBe('0');
  });

  test('coloured by role, hovering a block names its role', async ({ page }) => {
    test.setTimeout(180000);
    const segments = panelSection(page, 'segments');
    const colour = segments.getByRole('button', { name: 'colour by role' });
    await colour.scrollIntoViewIfNeeded();
    await colour.click();
    await expect(colour).toHaveAttribute('aria-pressed', 'true');
    // [4]'s map: the kept predictions of Cell [3] are activations (their graphs are saved for backward)
    const activation = segments.locator('.jp-CudaMemdiffSegments-block.jp-mod-activation').first();
    await activation.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, activation)).toBe(true);
    await expect(activation.locator('title')).toHaveText(
      /^\d[\d.]* [KMG]?i?B activation at 0x[0-9a-f]+, allocated\n {2}Cell \[3\]/
    );
    const workspace = segments.locator('.jp-CudaMemdiffSegments-block.jp-mod-workspace').first();
    await expect(workspace.locator('title')).toHaveText(/^\d[\d.]* [KMG]?i?B workspace at 0x[0-9a-f]+, allocated\n/);
  });
});
