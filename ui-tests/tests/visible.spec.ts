/**
 * The panel as a person sees it at 1280x720: what an action opens is inside
 * the visible panel, every section can be reached with the wheel and the
 * keyboard, and a snapshot file opens on double-click. Positions are checked
 * against the panel's bounding box, not only the DOM.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';
import {
  findLeakingCell,
  isInsideVisiblePanel,
  isUncovered,
  openPanel,
  openReplayedDemo,
  PANEL,
  PANEL_CONTENT,
  panelSection,
  runReplayedDemo,
  wheelUntilInside
} from './demo';

const REC = path.resolve(__dirname, '../../test-data/recordings/eval_without_no_grad--python');

test.use({ viewport: { width: 1280, height: 720 } });

test.describe('the panel at 1280x720', () => {
  test.beforeEach(async ({ page, tmpPath }) => {
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
  });

  test('the heading names the panel and its notebook, and stays at the top as the panel scrolls', async ({ page }) => {
    test.setTimeout(180000);
    await openPanel(page);
    await findLeakingCell(page);
    const panel = page.locator(PANEL);
    // the panel is a region named by its heading
    await expect(page.getByRole('region', { name: 'CUDA Memory', exact: true })).toHaveAttribute(
      'id',
      'cuda-memdiff-panel'
    );
    const heading = panel.getByRole('heading', { name: 'CUDA Memory', exact: true, level: 2 });
    const notebook = panel.locator('.jp-CudaMemdiffPanel-notebook');
    await expect(notebook).toHaveText('replay_demo.ipynb');
    // named once: the content does not repeat it
    await expect(panel.getByText('replay_demo.ipynb', { exact: true })).toHaveCount(1);
    const toolbar = panel.locator('.jp-SidePanel-toolbar');
    const place = async () => {
      const box = (await panel.boundingBox())!;
      const h = (await heading.boundingBox())!;
      const n = (await notebook.boundingBox())!;
      const t = (await toolbar.boundingBox())!;
      return {
        // at the top of the panel, above the toolbar, side by side, inside the panel's width
        top: Math.round(h.y - box.y),
        aboveToolbar: h.y + h.height <= t.y && n.y + n.height <= t.y,
        sideBySide: n.x >= h.x + h.width - 1,
        inside: h.x >= box.x && n.x + n.width <= box.x + box.width + 1,
        // whole, not cut short by an ellipsis at this width
        whole: await notebook.evaluate(el => el.scrollWidth <= el.clientWidth),
        uncovered: (await isUncovered(heading)) && (await isUncovered(notebook))
      };
    };
    const atTop = await place();
    expect(atTop).toEqual({
      top: expect.any(Number),
      aboveToolbar: true,
      sideBySide: true,
      inside: true,
      whole: true,
      uncovered: true
    });
    expect(atTop.top).toBeLessThanOrEqual(4);
    // scrolled by the wheel to the bottom, past sections whose headings stick: the heading stays where it was
    const content = page.locator(PANEL_CONTENT);
    expect(await wheelUntilInside(page, page.locator(`${PANEL} [data-cuda-memdiff-segment]`).last())).toBe(true);
    expect(await content.evaluate(el => el.scrollTop)).toBeGreaterThan(500);
    expect(await place()).toEqual(atTop);
    await expect(heading).toBeInViewport();
  });

  test('Find Leaking Cell, then "Show its diff", bring what they open into view', async ({ page }) => {
    test.setTimeout(180000);
    await openPanel(page);
    // start scrolled to the bottom, as after reading the segment map
    await page.locator(PANEL_CONTENT).evaluate(el => (el.scrollTop = el.scrollHeight));
    await findLeakingCell(page);
    const top = page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`);
    await expect.poll(() => isInsideVisiblePanel(page, top.locator('.jp-CudaMemdiffLeak-head'))).toBe(true);
    await expect.poll(() => isInsideVisiblePanel(page, panelSection(page, 'leaks').getByRole('status'))).toBe(true);

    // even with the diff collapsed: the action opens it
    await panelSection(page, 'diff').locator('.jp-CudaMemdiffSection-toggle').click();
    await expect(panelSection(page, 'diff').locator('.jp-CudaMemdiffSection-toggle')).toHaveAttribute(
      'aria-expanded',
      'false'
    );
    await top.getByRole('button', { name: 'Show its diff' }).click();
    await expect(panelSection(page, 'diff').locator('.jp-CudaMemdiffSection-toggle')).toHaveAttribute(
      'aria-expanded',
      'true'
    );
    const firstSite = page.locator(`${PANEL} .jp-CudaMemdiffSite`).first();
    await expect(firstSite).toHaveAttribute('data-cuda-memdiff-site', /3447429980\.py:3$/);
    await expect(page.locator(`${PANEL} .jp-CudaMemdiffDiff-summary`)).toHaveText(
      'Born 321 MiB in 26 blocks, freed 0 B in 0 blocks, net +321 MiB'
    );
    await expect.poll(() => isInsideVisiblePanel(page, firstSite)).toBe(true);
    // the diff's heading sticks at the top while its rows scroll
    await expect
      .poll(() => isInsideVisiblePanel(page, panelSection(page, 'diff').locator('.jp-CudaMemdiffSection-head')))
      .toBe(true);
  });

  test('every section can be scrolled to, by wheel and keyboard, and collapsed', async ({ page }) => {
    test.setTimeout(180000);
    await openPanel(page);
    await findLeakingCell(page);
    const content = page.locator(PANEL_CONTENT);
    // the content scrolls inside the panel instead of running past its bottom edge
    const sizes = await content.evaluate(el => ({ scroll: el.scrollHeight, client: el.clientHeight }));
    expect(sizes.scroll).toBeGreaterThan(sizes.client);
    const panelBox = (await page.locator(PANEL).boundingBox())!;
    const contentBox = (await content.boundingBox())!;
    expect(contentBox.y + contentBox.height).toBeLessThanOrEqual(panelBox.y + panelBox.height + 1);

    // an expanded stack too
    const site = page.locator(`${PANEL} .jp-CudaMemdiffSite`).first();
    await site.locator('.jp-CudaMemdiffSite-head').click();
    for (const name of ['leaks', 'chart', 'diff', 'segments']) {
      const heading = panelSection(page, name).locator('.jp-CudaMemdiffSection-toggle');
      expect(await wheelUntilInside(page, heading), `section ${name} reached by the wheel`).toBe(true);
    }
    expect(await wheelUntilInside(page, site.locator('.jp-CudaMemdiffStack-cell').first())).toBe(true);
    const lastRow = page.locator(`${PANEL} [data-cuda-memdiff-segment]`).last();
    expect(await wheelUntilInside(page, lastRow)).toBe(true);

    // the keyboard: the content takes focus, Home and End scroll it
    await content.focus();
    await page.keyboard.press('Home');
    await expect.poll(() => content.evaluate(el => el.scrollTop)).toBe(0);
    await page.keyboard.press('End');
    await expect.poll(() => isInsideVisiblePanel(page, lastRow)).toBe(true);

    // collapsing the leak finder and the chart gives their height to the diff
    await page.keyboard.press('Home');
    for (const name of ['leaks', 'chart']) {
      const toggle = panelSection(page, name).locator('.jp-CudaMemdiffSection-toggle');
      await toggle.click();
      await expect(toggle).toHaveAttribute('aria-expanded', 'false');
    }
    await content.evaluate(el => (el.scrollTop = 0));
    await expect.poll(() => isInsideVisiblePanel(page, site.locator('.jp-CudaMemdiffSite-head'))).toBe(true);
  });
});

test.describe('snapshot files in the file browser', () => {
  test.use({ viewport: { width: 1280, height: 720 } });

  test('a block picked in a tall segment map shows its stack in view, the block too', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const file = path.resolve(__dirname, '../../test-data/recordings/many_blocks--python/cell03.pickle.gz');
    await page.contents.uploadFile(file, `${tmpPath}/cell03.pickle.gz`);
    await page.filebrowser.openDirectory(tmpPath);
    await page.locator('.jp-DirListing-item', { hasText: 'cell03.pickle.gz' }).dblclick();
    const panel = page.locator(PANEL);
    // 267 segments, 2,400 px of rows: the map scrolls in a box of its own, half the window high
    await expect(panel.locator('[data-cuda-memdiff-segment]')).toHaveCount(267);
    const rows = panel.locator('.jp-CudaMemdiffSegments-rows');
    await rows.scrollIntoViewIfNeeded();
    expect((await rows.boundingBox())!.height).toBeLessThanOrEqual(720 / 2 + 1);
    expect(await rows.evaluate(el => el.scrollHeight > 2 * el.clientHeight)).toBe(true);

    // a click on a block of the map's last rows, scrolled to in its box: the first line of its stack comes into
    // view below the map, and the block stays in view
    await rows.evaluate(el => (el.scrollTop = el.scrollHeight));
    const block = panel.locator('.jp-CudaMemdiffSegments-block').last();
    expect(await isInsideVisiblePanel(page, block)).toBe(true);
    await block.click();
    const head = panel.locator('.jp-CudaMemdiffSegments-detail p').first();
    await expect(head).toHaveText(/^Block \d[\d.]* [KMG]?i?B at 0x[0-9a-f]+/);
    await expect.poll(() => isInsideVisiblePanel(page, head)).toBe(true);
    expect(await isInsideVisiblePanel(page, block)).toBe(true);
    expect(await isUncovered(head)).toBe(true);
  });

  test('double-click opens a snapshot in the panel', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    await page.contents.uploadFile(path.join(REC, 'cell02.pickle.gz'), `${tmpPath}/cell02.pickle.gz`);
    await page.filebrowser.openDirectory(tmpPath);
    await page.locator('.jp-DirListing-item', { hasText: 'cell02.pickle.gz' }).dblclick();
    await expect(page.locator('.jp-CudaMemdiffFile h2', { hasText: 'cell02.pickle.gz' })).toBeVisible();
    await expect(page.getByText('not UTF-8 encoded')).toHaveCount(0);
    const panel = page.locator(PANEL);
    await expect(panel).toBeVisible();
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f0');
    await expect(panel.locator('[data-cuda-memdiff-side="before"]')).toHaveValue('empty');
    await expect.poll(() => isInsideVisiblePanel(page, panel.locator('.jp-CudaMemdiffSite').first())).toBe(true);
    // no notebook cells in this file's stacks: the segment map colours blocks by allocation site, with a legend
    const legend = panel.getByRole('list', { name: 'Colours of the segment map' });
    await expect(legend.locator('li').first()).toContainText(/\(.*:\d+\)$/);
    // each of the largest sites in a colour of its own
    const blocks = panel.locator('.jp-CudaMemdiffSegments-block[class*="jp-mod-group"]');
    await expect(blocks.first()).toBeAttached();
    const colours = await blocks.evaluateAll(els => els.map(e => e.getAttribute('class')!.match(/jp-mod-group\d/)![0]));
    expect(new Set(colours).size).toBeGreaterThan(1);
    const segments = panel.locator('[data-cuda-memdiff-section="segments"]');
    await segments.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    expect(await segments.screenshot()).toMatchSnapshot('segments-of-a-file.png');
  });

  test('files of one name from two folders are told apart, and can be closed', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    for (const [folder, file] of [
      ['runA', 'cell01.pickle.gz'],
      ['runB', 'cell02.pickle.gz']
    ]) {
      await page.contents.uploadFile(path.join(REC, file), `${tmpPath}/${folder}/snapshot.pickle.gz`);
      // no factory named: the default one for the file type
      await page.evaluate(async p => {
        await window.jupyterapp.commands.execute('docmanager:open', { path: p });
      }, `${tmpPath}/${folder}/snapshot.pickle.gz`);
      await expect(page.locator('.jp-CudaMemdiffFile-totals').last()).toBeVisible();
    }
    const panel = page.locator(PANEL);
    const files = panel.getByRole('list', { name: 'Opened snapshot files' });
    await expect(files.locator('.jp-CudaMemdiffFiles-name')).toHaveText([
      'runA/snapshot.pickle.gz',
      'runB/snapshot.pickle.gz'
    ]);
    // the second file is shown on its own, not against the unrelated first
    await expect(panel.locator('[data-cuda-memdiff-side="before"]')).toHaveValue('empty');
    await expect(panel.locator('[data-cuda-memdiff-side="after"] option:checked')).toHaveText(
      'file runB/snapshot.pickle.gz'
    );
    await files.getByRole('button', { name: 'Close runB/snapshot.pickle.gz' }).click();
    await expect(files.locator('.jp-CudaMemdiffFiles-name')).toHaveText(['snapshot.pickle.gz']);
    await expect(panel.locator('[data-cuda-memdiff-side="after"] option:checked')).toHaveText(
      'file snapshot.pickle.gz'
    );
  });
});
