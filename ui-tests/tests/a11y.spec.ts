/**
 * Contrast, checked by axe-core in the light and the dark theme, on the
 * notebook's badges and on the panel with everything open (the leak finder,
 * the chart, the diff with a stack, the segment map); screenshots of the
 * panel in both themes and at a narrow and a wide width, to be looked at.
 */
import AxeBuilder from '@axe-core/playwright';
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import { BADGE, findLeakingCell, openPanel, openReplayedDemo, PANEL, PANEL_CONTENT, runReplayedDemo, setPanelWidth } from './demo';

/** Every element of the extension: the panel, the badges, the toolbar status, the highlighted cell's frame. */
const OURS = [PANEL, BADGE, '.jp-CudaMemdiffStatus'];

async function contrastOf(page: IJupyterLabPageFixture) {
  // JupyterLab's shell is absolutely positioned, so <body> has no height; with
  // its overflow hidden, axe then takes every element for hidden and checks
  // none of them (only form controls). A body as tall as the window changes
  // nothing on screen and lets axe see what a person sees.
  await page.evaluate(() => (document.body.style.height = '100vh'));
  let builder = new AxeBuilder({ page }).withRules(['color-contrast']);
  for (const selector of OURS) {
    builder = builder.include(selector);
  }
  const result = await builder.analyze();
  const describe = (items: typeof result.violations) =>
    items.flatMap(v => v.nodes.map(n => `${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
  return {
    violations: describe(result.violations),
    checked: result.passes.reduce((n, p) => n + p.nodes.length, 0),
    incomplete: describe(result.incomplete)
  };
}

async function setTheme(page: IJupyterLabPageFixture, theme: string) {
  await page.evaluate(t => window.jupyterapp.commands.execute('apputils:change-theme', { theme: t }), theme);
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-name', theme);
  // the theme's stylesheet swaps in after the attribute
  await page.waitForTimeout(500);
}

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
        await info.attach(`axe-${name}-${position}.json`, { body: JSON.stringify(result, null, 2), contentType: 'application/json' });
        expect(result.violations, `${theme}, panel scrolled to ${position}`).toEqual([]);
        expect(result.checked).toBeGreaterThan(10);
      }
      expect(await page.locator('.jp-Cell.jp-mod-cudaMemdiffLeak').screenshot()).toMatchSnapshot(`leaking-cell-${name}.png`);
      // as "Show its diff" left it: the diff's heading at the top
      await page.locator(PANEL_CONTENT).evaluate(el => {
        el.scrollTop = (el.querySelector('[data-cuda-memdiff-section="diff"]') as HTMLElement).offsetTop;
      });
      expect(await panel.screenshot()).toMatchSnapshot(`panel-${name}.png`);
    }

    await setTheme(page, 'JupyterLab Light');
    await setPanelWidth(page, 260);
    // the leak finder collapsed: the chart, the pickers and the diff share the height
    await panel.locator('[data-cuda-memdiff-section="leaks"] .jp-CudaMemdiffSection-toggle').click();
    await page.locator(PANEL_CONTENT).evaluate(el => (el.scrollTop = 0));
    await page.mouse.move(0, 0);
    expect(await panel.screenshot()).toMatchSnapshot('panel-narrow.png');
    await setPanelWidth(page, 640);
    await page.mouse.move(0, 0);
    await page.locator(PANEL_CONTENT).evaluate(el => (el.scrollTop = el.scrollHeight));
    expect(await panel.screenshot()).toMatchSnapshot('panel-wide-bottom.png');
    expect((await contrastOf(page)).violations).toEqual([]);
  });
});
