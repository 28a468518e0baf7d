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
});
