/**
 * Contrast, checked by axe-core in the light and the dark theme, on the
 * notebook's badges and on the panel with everything open (the leak finder,
 * the chart, the diff with a stack, the segment map), and on the outline of
 * the segment map's free space; screenshots of the panel in both themes and
 * at a narrow and a wide width, to be looked at.
 */
import { expect, test } from '@jupyterlab/galata';
import {
  contrastOf,
  findLeakingCell,
  openPanel,
  openReplayedDemo,
  outlineContrast,
  PANEL,
  PANEL_CONTENT,
  runReplayedDemo,
  screenshotOf,
  setPanelWidth,
  setTheme
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

test.describe('contrast and looks', () => {
  test('no colour-contrast violations in the light and dark themes; screenshots', async ({ page, tmpPath }, info) => {
    test.setTimeout(240000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await openPanel(page);
    await findLeakingCell(page);
    const panel = page.locator(PANEL);
    await panel.locator('.jp-CudaMemdiffLeak.jp-mod-top').getByRole('button', { name: 'Show its diff' }).click();
    await panel.locator('.jp-CudaMemdiffSite-head').first().click();
    await page.mouse.move(0, 0);
    // every badge, the leaking one (warn) included, in the viewport for axe and the screenshot
    await page.locator('.jp-Cell.jp-mod-cudaMemdiffLeak').scrollIntoViewIfNeeded();

    for (const [theme, name] of [
      ['JupyterLab Light', 'light'],
      ['JupyterLab Dark', 'dark']
    ]) {
      await setTheme(page, theme);
      for (const position of ['top', 'diff', 'bottom']) {
        await page.locator(PANEL_CONTENT).evaluate((el, where) => {
          const diff = el.querySelector('[data-cuda-memdiff-section="diff"]') as HTMLElement;
          el.scrollTop = where === 'top' ? 0 : where === 'diff' ? diff.offsetTop : el.scrollHeight;
        }, position);
        const result = await contrastOf(page);
        await info.attach(`axe-${name}-${position}.json`, {
          body: JSON.stringify(result, null, 2),
          contentType: 'application/json'
        });
        expect(result.violations, `${theme}, panel scrolled to ${position}`).toEqual([]);
        expect(result.checked).toBeGreaterThan(10);
      }
      expect(await page.locator('.jp-Cell.jp-mod-cudaMemdiffLeak').screenshot()).toMatchSnapshot(
        `leaking-cell-${name}.png`
      );
      // as "Show its diff" left it: the diff's heading at the top
      await page.locator(PANEL_CONTENT).evaluate(el => {
        el.scrollTop = (el.querySelector('[data-cuda-memdiff-section="diff"]') as HTMLElement).offsetTop;
      });
      expect(await screenshotOf(panel)).toMatchSnapshot(`panel-${name}.png`);
      // free space in the segment map: a pale fill (1.6:1 on the dark theme), told from the panel by its outline
      const free = panel.locator('.jp-CudaMemdiffSegments-free').first();
      expect(await outlineContrast(free), `${theme}: free space's outline`).toBeGreaterThanOrEqual(3);
    }

    await setTheme(page, 'JupyterLab Light');
    await setPanelWidth(page, 260);
    // the leak finder collapsed: the chart, the pickers and the diff share the height
    await panel.locator('[data-cuda-memdiff-section="leaks"] .jp-CudaMemdiffSection-toggle').click();
    await page.locator(PANEL_CONTENT).evaluate(el => (el.scrollTop = 0));
    await page.mouse.move(0, 0);
    expect(await screenshotOf(panel)).toMatchSnapshot('panel-narrow.png');
    await setPanelWidth(page, 640);
    await page.mouse.move(0, 0);
    await page.locator(PANEL_CONTENT).evaluate(el => (el.scrollTop = el.scrollHeight));
    expect(await screenshotOf(panel)).toMatchSnapshot('panel-wide-bottom.png');
    expect((await contrastOf(page)).violations).toEqual([]);
  });
});
