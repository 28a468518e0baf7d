/**
 * The keyboard stays in the panel when an action removes the button it was
 * on, and goes with the view where an action moves it: what a person who
 * works from the keyboard meets after each action, checked by where the
 * focus is and that it lies in the part of the panel they can see.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';
import {
  findLeakingCell,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  openSnapshotFile,
  PANEL,
  panelSection,
  runReplayedDemo
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

const FILE = path.resolve(__dirname, '../../test-data/recordings/eval_without_no_grad--python/cell02.pickle.gz');

test.describe('the keyboard after an action', () => {
  test.beforeEach(async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
  });

  test('goes to the diff "Show its diff" opens, and stays in the panel when buttons go', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    const panel = page.locator(PANEL);
    const focused = page.locator(':focus');
    const diffHeading = panelSection(page, 'diff').getByRole('button', { name: 'Diff by allocation site' });

    // Show its diff, from the keyboard: the focus goes with the view to the diff's heading
    await findLeakingCell(page);
    await panel.getByRole('button', { name: /^Show its diff, Cell \[3\]/ }).focus();
    await page.keyboard.press('Enter');
    await expect(diffHeading).toBeFocused();
    await expect.poll(() => isInsideVisiblePanel(page, diffHeading)).toBe(true);

    // another Before, then back to the selected cell: its button goes, the focus stays in the diff
    await panel.locator('[data-cuda-memdiff-side="before"]').selectOption({ index: 0 });
    const back = panel.getByRole('button', { name: 'Back to the selected cell' });
    await back.focus();
    await page.keyboard.press('Enter');
    await expect(back).toHaveCount(0);
    await expect(diffHeading).toBeFocused();

    // a file opened, then closed by its button: the focus stays in the diff
    await openSnapshotFile(page, FILE, tmpPath);
    const close = panel.getByRole('button', { name: 'Close cell02.pickle.gz' });
    await close.focus();
    await page.keyboard.press('Enter');
    await expect(close).toHaveCount(0);
    await expect(diffHeading).toBeFocused();

    // the leak finder closed: its whole section goes, the focus goes to the panel's content, and Tab goes on
    // from there, in the panel
    await panel.getByRole('button', { name: 'Close the leak finder' }).focus();
    await page.keyboard.press('Enter');
    await expect(panelSection(page, 'leaks')).toHaveCount(0);
    await expect(panel.getByRole('region', { name: 'CUDA Memory content' })).toBeFocused();
    await page.keyboard.press('Tab');
    expect(await focused.evaluate((el, p) => !!el.closest(p), PANEL)).toBe(true);
    expect(await isInsideVisiblePanel(page, focused)).toBe(true);
  });

  test('shows the panel ring on every control Tab reaches', async ({ page }) => {
    test.setTimeout(180000);
    await findLeakingCell(page);
    const content = page.locator(PANEL).getByRole('region', { name: 'CUDA Memory content' });
    await content.focus();
    const brand = await content.evaluate(el => {
      const probe = document.createElement('span');
      probe.style.color = 'var(--jp-brand-color1)';
      el.appendChild(probe);
      const colour = getComputedStyle(probe).color;
      probe.remove();
      return colour;
    });
    const seen: string[] = [];
    for (let k = 0; k < 60; k++) {
      await page.keyboard.press('Tab');
      const stop = await page.evaluate(p => {
        const el = document.activeElement as HTMLElement | null;
        if (!el || !el.closest(p)) {
          return null;
        }
        const style = getComputedStyle(el);
        const name = el.getAttribute('aria-label') ?? el.textContent?.trim().slice(0, 30) ?? '';
        return {
          what: `${el.tagName.toLowerCase()}${el.getAttribute('type') ? `[${el.getAttribute('type')}]` : ''} ${name}`,
          // the segment map draws its ring as a shape of its own over the rows (segments.spec checks it)
          ownRing: !el.closest('.jp-CudaMemdiffSegments'),
          ring: `${style.outlineStyle} ${style.outlineColor}`,
          width: parseFloat(style.outlineWidth)
        };
      }, PANEL);
      if (!stop) {
        break;
      }
      seen.push(stop.what);
      if (stop.ownRing) {
        expect.soft(stop.ring, stop.what).toBe(`solid ${brand}`);
        expect.soft(stop.width, stop.what).toBeGreaterThanOrEqual(1);
      }
    }
    // the pickers, the checkbox, the leak list's summaries and the stacks' buttons were among them
    expect(seen.filter(w => /^(select|input)/.test(w)).length).toBeGreaterThanOrEqual(3);
    expect(seen.filter(w => /^summary/.test(w)).length).toBeGreaterThanOrEqual(1);
    expect(seen.length).toBeGreaterThan(10);
  });
});
