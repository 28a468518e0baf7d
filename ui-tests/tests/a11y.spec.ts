/**
 * Contrast, checked by axe-core in the light and the dark theme, on the
 * notebook's badges and on the panel with everything open (the leak finder,
 * the chart, the diff with a stack, the segment map), and on the outline of
 * the segment map's free space; screenshots of the panel in both themes and
 * at a narrow and a wide width, to be looked at. The segment map's five
 * group colours, as read from its legend, stay apart for people with
 * red-green colour blindness, in both themes.
 */
import { expect, test } from '@jupyterlab/galata';
import { contrastRatio, difference, RGB, rgbOf, seenOver, Vision } from './colourvision';
import {
  backgroundBehind,
  contrastOf,
  findLeakingCell,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  outlineContrast,
  PANEL,
  PANEL_CONTENT,
  panelSection,
  runReplayedDemo,
  runReplayedTraining,
  screenshotOf,
  setPanelWidth,
  setTheme
} from './demo';

test.use({ viewport: { width: 1280, height: 720 } });

/**
 * The least CIEDE2000 difference between any two colours of the segment map
 * (the five groups, "other" and the band), with normal vision and simulated
 * deuteranopia and protanopia (colourvision.ts). About 2 is just
 * noticeable side by side. The earlier colours came to 7.5 (deuteranopia,
 * light: the green group beside the red one) and 4.0 (protanopia, dark: the
 * olive group beside the red one); today's come to 14.5.
 */
const LEAST_DIFFERENCE = 12;

/** WCAG 1.4.11: each group's colour against the panel, as for any shape that carries meaning. */
const LEAST_CONTRAST = 3;

const VISIONS: Vision[] = ['normal', 'deuteranopia', 'protanopia'];

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

  test('the segment map\u2019s five colours stay apart with red-green colour blindness, light and dark', async ({
    page
  }, info) => {
    test.setTimeout(180000);
    // the training session's last snapshot: five cells in colours of their own, other code, small blocks banded
    await runReplayedTraining(page);
    await openPanel(page);
    const segments = panelSection(page, 'segments');
    const legend = segments.getByRole('list', { name: 'Colours of the segment map' });
    const swatches = (kind: string) => legend.locator(`.jp-CudaMemdiffSegments-swatch.jp-mod-${kind}`);
    await expect(legend.locator('.jp-CudaMemdiffSegments-swatch[class*="jp-mod-group"]')).toHaveCount(5);
    await expect(swatches('other')).toHaveCount(1);
    await expect(swatches('band')).toHaveCount(1);
    await legend.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, legend)).toBe(true);

    const kinds = ['group0', 'group1', 'group2', 'group3', 'group4', 'other', 'band'];
    const report: Record<string, unknown> = {};
    for (const [theme, name] of [
      ['JupyterLab Light', 'light'],
      ['JupyterLab Dark', 'dark']
    ]) {
      await setTheme(page, theme);
      const panel = rgbOf(await backgroundBehind(legend));
      const seen = new Map<string, RGB>();
      for (const kind of kinds) {
        seen.set(kind, seenOver(await swatches(kind).evaluate(e => getComputedStyle(e).backgroundColor), panel));
      }
      // the map draws its blocks in the legend's colours (a small cell's may all be in bands)
      const legendColours = await legend
        .locator('.jp-CudaMemdiffSegments-swatch[class*="jp-mod-group"]')
        .evaluateAll(els => els.map(e => getComputedStyle(e).backgroundColor));
      const fills = await segments
        .locator('.jp-CudaMemdiffSegments-block[class*="jp-mod-group"]')
        .evaluateAll(els => els.map(e => getComputedStyle(e).fill));
      expect(new Set(fills).size, theme).toBeGreaterThan(1);
      expect(legendColours, theme).toEqual(expect.arrayContaining([...new Set(fills)]));
      for (const vision of VISIONS) {
        // every pair of groups, and each group beside "other" and the band
        const pairs = kinds
          .slice(0, 5)
          .flatMap((x, i) =>
            kinds.slice(i + 1).map(y => ({ x, y, d: difference(seen.get(x)!, seen.get(y)!, vision) }))
          );
        const least = pairs.reduce((a, b) => (b.d < a.d ? b : a));
        report[`${name} ${vision}`] = `${least.d.toFixed(1)} (${least.x}, ${least.y})`;
        expect(least.d, `${theme}, ${vision}: ${least.x} beside ${least.y}`).toBeGreaterThanOrEqual(LEAST_DIFFERENCE);
      }
      for (const kind of kinds.slice(0, 5)) {
        const contrast = contrastRatio(seen.get(kind)!, panel);
        report[`${name} ${kind} contrast`] = contrast.toFixed(2);
        expect(contrast, `${theme}: ${kind} against the panel`).toBeGreaterThanOrEqual(LEAST_CONTRAST);
      }
      await page.mouse.move(0, 0);
      expect(await segments.screenshot()).toMatchSnapshot(`segments-five-colours-${name}.png`);
    }
    await info.attach('segment-colours.json', {
      body: JSON.stringify(report, null, 2),
      contentType: 'application/json'
    });
  });
});
