import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { gunzipSync } from 'zlib';
import {
  contrastOf,
  dropOnPanel,
  isInsidePanelBox,
  isUncovered,
  linesOfText,
  openReplayedDemo,
  runReplayedDemo,
  setTheme
} from './demo';

// The timeline of a snapshot file that carries trace entries, as the user sees
// it: the drawn line ends at the height of what the recording says the last
// cell left allocated, the hover names the event's stack, and clicking two
// cell boundaries shows the same site and bytes as the CLI's diff of the two
// cells' own recorded pickles. With a notebook holding the code that made the
// file open, its frames say which cell's code they are, and that another
// process ran it: the notebook's kernel did not.
const ROOT = path.resolve(__dirname, '../..');
const REC = path.join(ROOT, 'test-data', 'recordings', 'clean_training--python');
const CLI = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const FACTORY = 'CUDA Memory Snapshot';

test.describe('snapshot file timeline', () => {
  test('draws allocated memory over the events and diffs two clicked moments', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const name = 'cell04.pickle.gz';
    const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));
    // The recorded cells' code in a notebook (not run), under a heading: the panel follows it.
    const sources: string[] = manifest.cells.map((c: { source: string }) => c.source);
    const notebook = {
      cells: [
        { cell_type: 'markdown', source: '# Training, recorded on an H200', metadata: {} },
        ...sources.map(source => ({ cell_type: 'code', source, metadata: {}, outputs: [], execution_count: null }))
      ],
      metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
      nbformat: 4,
      nbformat_minor: 5
    };
    await page.contents.uploadContent(JSON.stringify(notebook), 'text', `${tmpPath}/training.ipynb`);
    await page.notebook.openByPath(`${tmpPath}/training.ipynb`);
    await page.contents.uploadFile(path.join(REC, name), `${tmpPath}/${name}`);
    // The bytes come from the raw file endpoint, never as base64 inside the contents API's JSON.
    const requests: string[] = [];
    page.on('request', request => requests.push(request.url()));
    await page.evaluate(
      async ([p, factory]) => {
        await window.jupyterapp.commands.execute('docmanager:open', { path: p, factory });
      },
      [`${tmpPath}/${name}`, FACTORY]
    );
    const view = page.locator('.jp-CudaMemdiffFile', { has: page.locator('h2', { hasText: name }) });
    const chart = view.locator('.jp-CudaMemdiffTimeline-chart');
    await expect(chart).toBeVisible({ timeout: 60000 });
    await expect(chart).toBeInViewport();
    await expect(view.locator('.jp-CudaMemdiffTimeline-caption')).toContainText('over 2,454 allocations and frees');
    const forFile = requests.filter(url => url.includes(name));
    expect(forFile.some(url => new URL(url).pathname.endsWith(`/files/${tmpPath}/${name}`))).toBe(true);
    expect(forFile.filter(url => url.includes('/api/contents/') && url.includes('content=1'))).toEqual([]);

    // The line's last point is at the height of what the manifest says cell 4 left allocated.
    const finalBytes: number = manifest.cells[4].after.allocated;
    const yMax = Number(await chart.getAttribute('data-y-max-bytes'));
    const d = (await view.locator('.jp-CudaMemdiffTimeline-area').getAttribute('d'))!;
    const points = [...d.matchAll(/L([\d.]+),([\d.]+)/g)].map(m => [Number(m[1]), Number(m[2])]);
    const lastTop = points[points.length - 2];
    expect(lastTop[0]).toBeCloseTo(800, 1);
    expect(lastTop[1]).toBeCloseTo(200 - (finalBytes / yMax) * 200, 1);
    // ... and its highest point is the peak the caption names, at the top of the scale (5% headroom).
    expect(Math.min(...points.map(p => p[1]))).toBeCloseTo(200 - 200 / 1.05, 1);

    // Four cell boundaries, drawn where the trace marks them.
    const boundaries = view.locator('.jp-CudaMemdiffTimeline-boundary');
    await expect(boundaries).toHaveCount(4);

    // Hovering shows the event under the pointer with its stack, down to the notebook cell's code: the
    // frame of /tmp/ipykernel_644/1078466348.py, line 4, is the first code cell's code (not run: named by its
    // place), which another process (pid 644) ran, not this notebook's kernel.
    const box = (await chart.boundingBox())!;
    await page.mouse.move(box.x + box.width * (0.5 / 2454), box.y + box.height / 2);
    const hover = view.locator('.jp-CudaMemdiffTimeline-hover');
    // in words; torch's name for the trace action where a PyTorch user looks for it, the tooltip
    const moment = hover.locator('p').first();
    await expect(moment).toHaveText('Moment 1: 6.75 KiB allocated (7.00 KiB allocated in all)');
    await expect(moment).toHaveAttribute('title', "torch's trace action: alloc");
    // A cell's place counts every cell, the heading too, as the status bar does.
    await expect(hover.locator('li').first()).toHaveText(
      /^\S+ \(\/tmp\/ipykernel_644\/1078466348\.py:4; same code as Cell 2\/6, run by another process\)$/
    );

    // Click the boundary after cell 0, then the one after cell 1: the diff is
    // the CLI's diff of the cells' recorded pickles.
    const expected = JSON.parse(
      execFileSync(
        process.execPath,
        [CLI, 'diff', path.join(REC, 'cell00.pickle.gz'), path.join(REC, 'cell01.pickle.gz'), '--json'],
        { encoding: 'utf-8' }
      )
    );
    for (const k of [0, 1]) {
      const line = (await boundaries.nth(k).boundingBox())!;
      await page.mouse.click(line.x + line.width / 2, box.y + box.height / 2);
    }
    const result = view.locator('.jp-CudaMemdiffTimeline-diff');
    const mib = (bytes: number) => {
      const v = bytes / 2 ** 20;
      return `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} MiB`;
    };
    await expect(result.locator('.jp-CudaMemdiffTimeline-diffSummary')).toContainText(
      `net +${mib(expected.net_bytes)}`
    );
    const top = result.locator('tbody tr').first();
    // The site is a line of the training cell, which the notebook holds twice (cells 3 and 5 of 6): not run
    // here, each is named by its place, as the status bar names cells, as code another process ran.
    const site = expected.groups[0].site;
    const ran = manifest.cells.find(
      (c: any) => manifest.code_names_by_execution_count[c.execution_count] === site.filename
    );
    const places = sources.flatMap((s, k) => (s === ran.source ? [k + 2] : []));
    expect(places).toEqual([3, 5]);
    await expect(top.locator('td').last()).toHaveText(
      `${site.name} (${site.filename}:${site.line}; same code as ${places.map(k => `Cell ${k}/6`).join(' or ')}, ` +
        'run by another process)'
    );
    await expect(top.locator('td').first()).toHaveText(`+${mib(expected.groups[0].net_bytes)}`);
    // The site column's header starts where its sites start, not at the right edge over them.
    const textLeft = (cell: Locator) =>
      cell.evaluate(el => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return range.getBoundingClientRect().left;
      });
    const header = result.locator('thead th').last();
    await expect(header).toHaveText('Allocation site');
    expect(Math.abs((await textLeft(header)) - (await textLeft(top.locator('td').last())))).toBeLessThan(2);
    // The panel, showing the same file, names cells the same way: each colour of its segment map names the
    // cell whose code it is, the training cell's two copies together, run by another process.
    const legend = page.locator('#cuda-memdiff-panel .jp-CudaMemdiffSegments-legend li');
    await expect(legend.first()).toBeVisible();
    const cellColours = (await legend.allTextContents()).filter(t => t.startsWith('Same code as'));
    expect(cellColours).toEqual(
      expect.arrayContaining([
        'Same code as Cell 2/6, run by another process',
        'Same code as Cell 3/6 or Cell 5/6, run by another process'
      ])
    );
    expect(new Set(cellColours).size).toBe(cellColours.length);
    await result.scrollIntoViewIfNeeded();
    await expect(result).toBeInViewport();
    await page.screenshot({ path: test.info().outputPath('timeline.png') });
  });

  test('the keyboard moves through the moments and diffs two, as the pointer does', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const name = 'cell04.pickle.gz';
    await page.contents.uploadFile(path.join(REC, name), `${tmpPath}/${name}`);
    await page.evaluate(
      async ([p, factory]) => {
        await window.jupyterapp.commands.execute('docmanager:open', { path: p, factory });
      },
      [`${tmpPath}/${name}`, FACTORY]
    );
    const view = page.locator('.jp-CudaMemdiffFile', { has: page.locator('h2', { hasText: name }) });
    const slider = view.getByRole('slider', { name: 'Moment of the allocation timeline' });
    await expect(slider).toBeVisible({ timeout: 60000 });
    // the view is a region a screen reader names by its file
    await expect(page.getByRole('region', { name, exact: true })).toHaveClass(/jp-CudaMemdiffFile/);
    // Tab reaches it, with a ring a person sees
    await view.locator('h2').evaluate(h => {
      h.tabIndex = -1;
      h.focus();
    });
    for (let k = 0; k < 10 && !(await slider.evaluate(el => el === document.activeElement)); k++) {
      await page.keyboard.press('Tab');
    }
    await expect(slider).toBeFocused();
    expect(await slider.evaluate(el => getComputedStyle(el).outlineStyle)).toBe('solid');
    await expect(slider).toHaveAttribute('aria-valuetext', 'moment 1 of 2,454');

    // Page Down goes to the cell boundaries, where a click snaps: Enter at the first two gives the CLI's diff of
    // the first two cells' pickles, as clicking them does (the test above)
    const expected = JSON.parse(
      execFileSync(
        process.execPath,
        [CLI, 'diff', path.join(REC, 'cell00.pickle.gz'), path.join(REC, 'cell01.pickle.gz'), '--json'],
        { encoding: 'utf-8' }
      )
    );
    const hover = view.locator('.jp-CudaMemdiffTimeline-hover p').first();
    const result = view.locator('.jp-CudaMemdiffTimeline-diff');
    await page.keyboard.press('PageDown');
    const first = Number(await slider.getAttribute('aria-valuenow'));
    await expect(hover).toHaveText(new RegExp(`^Moment ${first.toLocaleString('en-US')}: `));
    await page.keyboard.press('Enter');
    await expect(result).toHaveText(`Moment ${first.toLocaleString('en-US')} picked: pick another moment to compare.`);
    await page.keyboard.press('PageDown');
    expect(Number(await slider.getAttribute('aria-valuenow'))).toBeGreaterThan(first);
    await page.keyboard.press('Enter');
    const mib = (bytes: number) => {
      const v = bytes / 2 ** 20;
      return `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} MiB`;
    };
    await expect(result.locator('.jp-CudaMemdiffTimeline-diffSummary')).toContainText(
      `net +${mib(expected.net_bytes)}`
    );
    // the cursor stands where the keyboard left it, inside the drawing
    const cursor = (await view.locator('.jp-CudaMemdiffTimeline-cursor').boundingBox())!;
    const drawing = (await slider.boundingBox())!;
    expect(cursor.x).toBeGreaterThan(drawing.x);
    expect(cursor.x).toBeLessThan(drawing.x + drawing.width);
  });
});

// A large real recording opened from the file browser: the engine worker
// reads it from the server (the page never holds its bytes) and the user
// sees how far reading has got, then the parse, then the file's figures,
// which are what the recording's manifest says. The network is slowed so the
// progress stays on screen long enough for a person to read it.
test.describe('opening a large snapshot file', () => {
  const BIG_REC = path.join(ROOT, 'test-data', 'recordings', 'many_blocks--python');

  test('shows reading progress, then the figures the recording holds', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    const manifest = JSON.parse(fs.readFileSync(path.join(BIG_REC, 'manifest.json'), 'utf-8'));
    const cell = manifest.cells[3];
    const after = cell.after;
    // The plain pickle (44.7 MB), written into the server's folder as a user's file is.
    const root: string = await page.evaluate(
      () => JSON.parse(document.getElementById('jupyter-config-data')!.textContent!).serverRoot
    );
    const bytes = gunzipSync(fs.readFileSync(path.join(BIG_REC, 'cell03.pickle.gz')));
    fs.writeFileSync(path.join(root, tmpPath, 'many_blocks.pickle'), bytes);
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    const gib = (n: number) => `${(n / 2 ** 30).toFixed(2)} GiB`;

    // Every status line the view shows, in order; and what the page posts to the worker.
    await page.evaluate(() => {
      const w = window as any;
      w.__statuses = [];
      new MutationObserver(() => {
        for (const e of document.querySelectorAll('.jp-CudaMemdiffFile-status')) {
          const text = e.textContent ?? '';
          if (text && w.__statuses[w.__statuses.length - 1] !== text) {
            w.__statuses.push(text);
          }
        }
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
      w.__posted = [];
      const post = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (message: any, transfer?: any) {
        w.__posted.push([message?.op, message?.payload?.bytes?.byteLength ?? null, message?.payload?.request?.path]);
        return post.call(this, message, transfer);
      };
    });
    // About 10 s of reading at 4 MiB/s, for the page and its worker alike.
    // (Galata's page is a proxy; CDP wants the page itself.)
    const cdp = await page.context().newCDPSession(page.context().pages()[0]);
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 4 * 2 ** 20,
      uploadThroughput: -1
    });
    await page.filebrowser.openDirectory(tmpPath);
    await page.locator('.jp-DirListing-item', { hasText: 'many_blocks.pickle' }).dblclick();
    const view = page.locator('.jp-CudaMemdiffFile', { has: page.locator('h2', { hasText: 'many_blocks.pickle' }) });
    const status = view.locator('.jp-CudaMemdiffFile-status');
    await expect(status).toHaveText(new RegExp(`^Reading [\\d.]+ (KiB|MiB) of ${mb(bytes.length)}…$`), {
      timeout: 60000
    });
    await expect(status).toBeInViewport();
    await page.screenshot({ path: test.info().outputPath('reading.png') });
    // The heading counts what the table's Blocks column counts: allocated blocks.
    const blocks = after.memory_stats['allocation.all.current'];
    const count = (n: number) => n.toLocaleString('en-US');
    await expect(status).toHaveText(`${count(blocks)} allocated blocks, ${count(cell.trace_entries)} trace entries`, {
      timeout: 120000
    });
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1
    });
    // The figures: what the recording says cell 3 left allocated and reserved.
    const row = view.locator('.jp-CudaMemdiffFile-totals tbody tr');
    await expect(row).toHaveCount(1);
    await expect(row.locator('td')).toHaveText([
      'cuda:0',
      gib(after.allocated),
      gib(after.reserved),
      /./,
      /./,
      count(after.memory_stats['allocation.all.current'])
    ]);
    await expect(row).toBeInViewport();
    // The user saw the reading grow, then the parse, in that order.
    const statuses: string[] = await page.evaluate(() => (window as any).__statuses);
    const reading = statuses.filter(t => t.startsWith('Reading '));
    expect(reading.length).toBeGreaterThan(3);
    const parsing = statuses.indexOf(`Parsing ${mb(bytes.length)} in the background…`);
    expect(parsing).toBeGreaterThan(statuses.indexOf(reading[reading.length - 1]));
    // The worker read the file itself: the page posted its path, never its bytes.
    const posted: [string, number | null, string | undefined][] = await page.evaluate(() => (window as any).__posted);
    expect(posted.filter(([op]) => op === 'fetchSnapshotFile')).toEqual([
      ['fetchSnapshotFile', null, `${tmpPath}/many_blocks.pickle`]
    ]);
    expect(posted.filter(([, size]) => size !== null)).toEqual([]);
    // And the panel holds it.
    await expect(page.locator('#cuda-memdiff-panel .jp-CudaMemdiffFiles-name')).toHaveText(['many_blocks.pickle']);
    await page.screenshot({ path: test.info().outputPath('opened.png') });
  });
});

// Files dropped on the panel take the road of opened ones (parsed once in the
// engine worker): the panel shows what the recording says, a broken file is
// one line that leaves the rest in place, and a dropped file can be closed.
test.describe('snapshot files dropped on the panel', () => {
  const DROP_REC = path.join(ROOT, 'test-data', 'recordings', 'eval_without_no_grad--python');
  const PANEL = '#cuda-memdiff-panel';

  test('show the diff the recording holds, name a broken file in one line, and close', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const manifest = JSON.parse(fs.readFileSync(path.join(DROP_REC, 'manifest.json'), 'utf-8'));
    const allocated = (k: number): number => manifest.cells[k].after.allocated;
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
    // In a pattern: the panel keeps a figure and its unit together with a no-break space.
    const mibs = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)}\\sMiB`;
    for (const name of ['cell01.pickle.gz', 'cell02.pickle.gz']) {
      await page.contents.uploadFile(path.join(DROP_REC, name), `${tmpPath}/${name}`);
    }
    await page.contents.uploadContent('not a pickle', 'text', `${tmpPath}/notes.pickle`);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-CudaMemdiffPanel-content')).toBeVisible();

    // What the page posts to the engine worker: each dropped file's bytes go there, moved (one transferred buffer).
    await page.evaluate(() => {
      const w = window as any;
      w.__posted = [];
      const post = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (message: any, transfer?: any) {
        w.__posted.push([message?.op, message?.payload?.bytes?.byteLength ?? null, transfer?.length ?? 0]);
        return post.call(this, message, transfer);
      };
    });
    await dropOnPanel(page, [`${tmpPath}/cell01.pickle.gz`, `${tmpPath}/cell02.pickle.gz`]);
    // The later file, against an empty device: what the recording says cell 2 left allocated.
    const status = panel.getByRole('status');
    await expect(status).toHaveText(
      new RegExp(`^Born\\s${mibs(allocated(2))}\\sin\\s\\d+\\sblocks,\\s.*net\\s\\+${mibs(allocated(2))}$`),
      {
        timeout: 60000
      }
    );
    await expect(status).toBeInViewport();
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f1');
    // A file the panel shows is on disk with all it holds: Save as Pickle would write its blocks without the
    // history the panel never had (the palette greys it out).
    expect(await page.evaluate(() => window.jupyterapp.commands.isEnabled('cuda-memdiff:save-snapshot'))).toBe(false);
    const sizes = ['cell01.pickle.gz', 'cell02.pickle.gz'].map(n => fs.statSync(path.join(DROP_REC, n)).size);
    expect(await page.evaluate(() => (window as any).__posted)).toEqual(
      sizes.map(size => ['openSnapshotFile', size, 1])
    );
    // The first as Before: what cell 2 added to cell 1, the graphs `preds` keeps.
    await panel.locator('[data-cuda-memdiff-side="before"]').selectOption('f0');
    await expect(status).toHaveText(
      `Born ${mib(allocated(2) - allocated(1))} in 26 blocks, freed 0 B in 0 blocks, net +${mib(allocated(2) - allocated(1))}`
    );
    await expect(panel.locator('[data-cuda-memdiff-site]').first()).toHaveAttribute(
      'data-cuda-memdiff-site',
      /3447429980\.py:3$/
    );
    // Two cells of one run: no word of different runs.
    await expect(panel.locator('.jp-CudaMemdiffDiff-runs')).toHaveCount(0);

    // A broken file: one line naming it, and the comparison shown stays.
    await dropOnPanel(page, [`${tmpPath}/notes.pickle`]);
    const alert = panel.getByRole('alert');
    await expect(alert).toHaveText(/^Cannot read notes\.pickle: not a snapshot[^\n]*$/);
    await expect(alert).toBeVisible();
    await expect(status).toHaveText(new RegExp(`net\\s\\+${mibs(allocated(2) - allocated(1))}$`));
    await expect(panel.locator('.jp-CudaMemdiffFiles li')).toHaveCount(2);

    // Dropped files close as opened ones do; with none left, the panel says what it will show.
    for (const name of ['cell02.pickle.gz', 'cell01.pickle.gz']) {
      await panel.getByRole('button', { name: `Close ${name}` }).click();
    }
    await expect(panel.locator('.jp-CudaMemdiffFiles li')).toHaveCount(0);
    await expect(panel.locator('.jp-CudaMemdiffPanel-empty')).toContainText('No GPU memory snapshots yet');
  });

  test('a file that cannot be read is said in sight of a scrolled panel, can be dismissed, and goes when a file opens', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(120000);
    for (const name of ['cell01.pickle.gz', 'cell02.pickle.gz']) {
      await page.contents.uploadFile(path.join(DROP_REC, name), `${tmpPath}/${name}`);
    }
    await page.contents.uploadContent('my notes, not a snapshot', 'text', `${tmpPath}/notes.txt`);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    const content = panel.locator('.jp-CudaMemdiffPanel-content');
    await dropOnPanel(page, [`${tmpPath}/cell01.pickle.gz`, `${tmpPath}/cell02.pickle.gz`]);
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f1', { timeout: 60000 });
    // Scrolled to the bottom, as after reading the segment map: the top of the content is out of sight.
    await content.evaluate(el => (el.scrollTop = el.scrollHeight));
    await expect.poll(() => content.evaluate(el => el.scrollTop)).toBeGreaterThan(100);

    await dropOnPanel(page, [`${tmpPath}/notes.txt`]);
    const alert = panel.getByRole('alert');
    await expect(alert).toHaveText(/^Cannot read notes\.txt: not a snapshot/);
    // In sight where the file was dropped, with nothing over it, and the user's place in the content kept.
    await expect.poll(() => isInsidePanelBox(page, alert)).toBe(true);
    expect(await isUncovered(alert.locator('.jp-CudaMemdiffPanel-errorText'))).toBe(true);
    expect(await content.evaluate(el => el.scrollTop)).toBeGreaterThan(100);
    await page.screenshot({ path: test.info().outputPath('unreadable-in-sight.png') });
    for (const theme of ['JupyterLab Dark', 'JupyterLab Light']) {
      await setTheme(page, theme);
      const { violations, checked } = await contrastOf(page, ['.jp-CudaMemdiffPanel-error']);
      expect(violations, theme).toEqual([]);
      expect(checked, theme).toBeGreaterThan(0);
      await page.screenshot({ path: test.info().outputPath(`unreadable-${theme.split(' ')[1]}.png`) });
    }

    // Dismissed by its button.
    const dismiss = alert.getByRole('button', { name: 'Dismiss' });
    expect(await isInsidePanelBox(page, dismiss)).toBe(true);
    await dismiss.click();
    await expect(alert).toHaveCount(0);

    // Said again for another bad drop, and gone once a file opens.
    await dropOnPanel(page, [`${tmpPath}/notes.txt`]);
    await expect(alert).toHaveText(/^Cannot read notes\.txt/);
    await dropOnPanel(page, [`${tmpPath}/cell01.pickle.gz`]);
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f2');
    await expect(alert).toHaveCount(0);
  });

  test('dragging files over the panel shows where they go, and the cue leaves with them', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    await page.contents.uploadFile(path.join(DROP_REC, 'cell02.pickle.gz'), `${tmpPath}/cell02.pickle.gz`);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-CudaMemdiffPanel-content')).toBeVisible();
    const cue = panel.locator('.jp-CudaMemdiffPanel-dropCue');
    await expect(cue).toHaveCount(0);

    // A desktop file dragged in: over the content, then over a paragraph inside it.
    const drag = (type: string, selector: string) =>
      page.evaluate(
        ([t, sel]) => {
          const transfer = new DataTransfer();
          transfer.items.add(new File(['x'], 'cell02.pickle.gz'));
          const target = document.querySelector(`#cuda-memdiff-panel ${sel}`)!;
          target.dispatchEvent(new DragEvent(t, { dataTransfer: transfer, bubbles: true, cancelable: true }));
        },
        [type, selector]
      );
    await drag('dragenter', '.jp-CudaMemdiffPanel-content');
    await drag('dragenter', '.jp-CudaMemdiffPanel-emptyTitle');
    await drag('dragleave', '.jp-CudaMemdiffPanel-content');
    await expect(cue).toHaveText('Drop snapshot files to open them');
    await expect.poll(() => isInsidePanelBox(page, cue.locator('.jp-CudaMemdiffPanel-dropCueText'))).toBe(true);
    // The frame covers the panel's content, not a corner of it.
    const [cueBox, contentBox] = await Promise.all([
      cue.boundingBox(),
      panel.locator('.jp-CudaMemdiffPanel-content').boundingBox()
    ]);
    expect(cueBox!.height).toBeGreaterThanOrEqual(contentBox!.height - 1);
    expect(cueBox!.width).toBeGreaterThanOrEqual(contentBox!.width - 1);
    expect(await cue.evaluate(el => getComputedStyle(el).borderTopStyle)).toBe('dashed');
    await page.screenshot({ path: test.info().outputPath('dragover.png') });

    // Leaving the panel takes the cue away; so does a drop, which opens the file.
    await drag('dragleave', '.jp-CudaMemdiffPanel-emptyTitle');
    await expect(cue).toHaveCount(0);
    await drag('dragenter', '.jp-CudaMemdiffPanel-content');
    await expect(cue).toHaveCount(1);
    await dropOnPanel(page, [`${tmpPath}/cell02.pickle.gz`]);
    await expect(cue).toHaveCount(0);
    await expect(panel.locator('.jp-CudaMemdiffFiles-name')).toHaveText(['cell02.pickle.gz'], { timeout: 60000 });
  });

  test('say above the figures when two files look like two runs, and why', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const REC = path.join(ROOT, 'test-data', 'recordings');
    // The OOM session's first cell and the demo's third: two processes, with no segment in common.
    const files = [
      path.join(REC, 'oom--python', 'cell00.pickle.gz'),
      path.join(REC, 'gpu_memory_demo--python', 'cell02.pickle.gz')
    ];
    const names = ['oom-cell00.pickle.gz', 'demo-cell02.pickle.gz'];
    for (let k = 0; k < files.length; k++) {
      await page.contents.uploadFile(files[k], `${tmpPath}/${names[k]}`);
    }
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-CudaMemdiffPanel-content')).toBeVisible();
    await dropOnPanel(
      page,
      names.map(n => `${tmpPath}/${n}`)
    );
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f1', { timeout: 60000 });
    await panel.locator('[data-cuda-memdiff-side="before"]').selectOption('f0');
    const status = panel.getByRole('status');
    await expect(status).toHaveText(/^Born\s481\sMiB\sin\s38\sblocks,\sfreed\s100\sGiB\sin\s5\sblocks/);
    // The note comes before the figures it qualifies, and can be read where it is.
    const note = panel.locator('.jp-CudaMemdiffDiff-runs');
    await expect(note).toHaveText(
      'These snapshots look like they come from different runs (none of the 5 segments of one is among the 23 of ' +
        'the other), so the figures below are not a leak: every block counts as freed or born.'
    );
    await note.scrollIntoViewIfNeeded();
    await expect(note).toBeInViewport({ ratio: 1 });
    const [noteBox, statusBox, panelBox] = await Promise.all([
      note.boundingBox(),
      status.boundingBox(),
      panel.boundingBox()
    ]);
    expect(noteBox!.y + noteBox!.height).toBeLessThanOrEqual(statusBox!.y);
    expect(noteBox!.x + noteBox!.width).toBeLessThanOrEqual(panelBox!.x + panelBox!.width);
    // Against an empty device there is one run: the note goes.
    await panel.locator('[data-cuda-memdiff-side="before"]').selectOption('empty');
    await expect(status).toHaveText(/^Born\s481\sMiB\sin\s38\sblocks,\sfreed\s0\sB\sin\s0\sblocks/);
    await expect(note).toHaveCount(0);
  });

  test("name another process's code as such, not as the notebook's cell", async ({ page, tmpPath }) => {
    // The demo, replayed from its recording (kernel pid 669), builds `preds` in Cell [3]; eval_without_no_grad
    // (pid 447) ran the same source, so its file names that code by the same hash in another folder.
    // Was "Cell [3], line 3", and the segment map's "Cell [3]": as if this notebook had allocated it.
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await page.contents.uploadFile(path.join(DROP_REC, 'cell03.pickle.gz'), `${tmpPath}/cell03.pickle.gz`);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await dropOnPanel(page, [`${tmpPath}/cell03.pickle.gz`]);
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f0', { timeout: 60000 });
    const site = panel.locator('[data-cuda-memdiff-site$="3447429980.py:3"]');
    await expect(site).toContainText(
      '<module> (/tmp/ipykernel_447/3447429980.py:3; same code as Cell [3], run by another process)'
    );
    await site.scrollIntoViewIfNeeded();
    await expect(site).toBeInViewport();
    // In the 250 px panel the path wraps after a slash, never inside the file's name.
    const nameLines = await linesOfText(site.locator('.jp-CudaMemdiffSite-label'), '3447429980.py');
    expect(nameLines).toBe(1);
    const legend = panel.locator('.jp-CudaMemdiffSegments-legend li');
    await expect(legend.filter({ hasText: 'Same code as Cell [3], run by another process' })).toHaveCount(1);
    await expect(legend.filter({ hasText: /^Cell \[3\]/ })).toHaveCount(0);
  });

  // The drop is the panel's own: with the files plugin disabled (JupyterLab's
  // plugin manager, or disabledExtensions in the page config, as here), a
  // dropped file still opens, where before the drop did nothing and said nothing.
  test('open with the files plugin disabled', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const FILES_PLUGIN = 'jupyterlab-cuda-memdiff:files';
    const manifest = JSON.parse(fs.readFileSync(path.join(DROP_REC, 'manifest.json'), 'utf-8'));
    const mibs = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)}\\sMiB`;
    await page.contents.uploadFile(path.join(DROP_REC, 'cell02.pickle.gz'), `${tmpPath}/cell02.pickle.gz`);
    // The lab page as a server with the plugin in disabledExtensions serves it.
    await page.route('**/*', async (route: any) => {
      if (route.request().resourceType() !== 'document') {
        await route.fallback();
        return;
      }
      const response = await route.fetch();
      const html = (await response.text()).replace(
        /(<script id="jupyter-config-data" type="application\/json">)([\s\S]*?)(<\/script>)/,
        (_: string, open: string, json: string, close: string) => {
          const config = JSON.parse(json);
          config.disabledExtensions = [...(config.disabledExtensions ?? []), FILES_PLUGIN];
          return open + JSON.stringify(config) + close;
        }
      );
      await route.fulfill({ response, body: html });
    });
    await page.evaluate(() => location.reload());
    await page.waitForFunction(() => (window as any).jupyterapp, null, { timeout: 60000 });
    await page.evaluate(() => window.jupyterapp.restored);
    await page.waitForFunction(
      () => (window as any).jupyterapp?.isPluginActivated?.('jupyterlab-cuda-memdiff:panel'),
      null,
      {
        timeout: 60000
      }
    );
    expect(await page.evaluate((id: string) => window.jupyterapp.hasPlugin(id), FILES_PLUGIN)).toBe(false);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-CudaMemdiffPanel-content')).toBeVisible();
    await dropOnPanel(page, [`${tmpPath}/cell02.pickle.gz`]);
    const allocated = manifest.cells[2].after.allocated;
    await expect(panel.getByRole('status')).toHaveText(
      new RegExp(`^Born\\s${mibs(allocated)}\\sin\\s\\d+\\sblocks,\\s.*net\\s\\+${mibs(allocated)}$`),
      { timeout: 60000 }
    );
    await expect(panel.getByRole('status')).toBeInViewport();
    await expect(panel.locator('.jp-CudaMemdiffFiles-name')).toHaveText(['cell02.pickle.gz']);
  });
});
