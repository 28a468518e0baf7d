import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';
import { execFileSync } from 'child_process';
import {
  BADGE,
  clickNotebookToolbarItem,
  CODE_CELLS,
  openPanel,
  openReplayedDemo,
  PANEL,
  panelSection,
  restartKernel,
  runReplayedDemo,
  screenshotOf
} from './demo';

// The demo notebook replayed from its H200 recording: the panel must show the
// diff of the cell that keeps autograd graphs alive, and its stack must lead
// back to the cell.
const PREDS_CELL = 4; // preds.append(model(b)), the third code cell, execution [3]

test.describe('diff panel', () => {
  test('shows a cell diff by site and leads from a stack frame back to the cell', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);

    // The notebook toolbar button opens the panel.
    await clickNotebookToolbarItem(page, 'cuda-memdiff-open-panel');
    const panel = page.locator(PANEL);
    await expect(panel).toBeVisible();

    // Select execution [3] on the chart: its diff lists the site that keeps 321 MiB.
    await panel
      .getByRole('listbox', { name: 'Cells' })
      .getByRole('option', { name: /^\[3\] preds = \[\]/ })
      .click();
    await expect(panel.getByRole('status')).toHaveText(
      'Born 321 MiB in 26 blocks, freed 0 B in 0 blocks, net +321 MiB'
    );
    const top = panel.locator('[data-cuda-memdiff-site]').first();
    await expect(top).toHaveAttribute('data-cuda-memdiff-site', /3447429980\.py:3$/);
    await expect(top).toHaveAttribute('data-cuda-memdiff-net-bytes', String(504406016 - 167813120));

    // Expand it: the stack names the cell and its source line; clicking lands there.
    await top.locator('.jp-CudaMemdiffSite-head').click();
    const frame = top.locator('.jp-CudaMemdiffStack-cell');
    await expect(frame).toContainText('preds.append(model(b))');
    const link = frame.getByRole('button', { name: 'Cell [3], line 3', exact: true });
    await page.notebook.selectCells(0);
    await link.click();
    await expect
      .poll(() => page.evaluate(() => (window.jupyterapp.shell.currentWidget as any).content.activeCellIndex))
      .toBe(PREDS_CELL);
    const cursor = await page.evaluate(() => {
      const nb = (window.jupyterapp.shell.currentWidget as any).content;
      return nb.activeCell.editor.getCursorPosition();
    });
    expect(cursor).toEqual({ line: 2, column: 0 });
  });

  test("opens on a cell's diff from a click on its badge", async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    const panel = page.locator(PANEL);
    await expect(panel).toBeHidden();
    // The badge of [3] (+321 MiB) offers its diff on hover and gives it on a click.
    const badge = page.locator(`${BADGE}[data-cuda-memdiff-net-bytes="${504406016 - 167813120}"]`);
    await expect(badge).toHaveAttribute(
      'title',
      /\nClick for what this run left, by line, in the CUDA Memory panel\.$/
    );
    await badge.click();
    await expect(panel).toBeVisible();
    await expect(panel.getByRole('status')).toHaveText(
      'Born 321 MiB in 26 blocks, freed 0 B in 0 blocks, net +321 MiB'
    );
    await expect(panel.locator('[data-cuda-memdiff-site]').first()).toHaveAttribute(
      'data-cuda-memdiff-site',
      /3447429980\.py:3$/
    );
    // another cell's badge moves the diff to that cell: [2], the batches (+32.0 MiB)
    await page.locator(BADGE, { hasText: '+32.0 MiB' }).first().click();
    await expect(panel.getByRole('status')).toHaveText(
      'Born 32.0 MiB in 8 blocks, freed 0 B in 0 blocks, net +32.0 MiB'
    );
  });
});

test.describe('snapshot files', () => {
  const REC = path.resolve(__dirname, '../../test-data/recordings/eval_without_no_grad--python');

  test('open from the file browser and diff against each other once the user picks them', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    for (const name of ['cell01.pickle.gz', 'cell02.pickle.gz']) {
      await page.contents.uploadFile(path.join(REC, name), `${tmpPath}/${name}`);
    }
    const names = ['cell01.pickle.gz', 'cell02.pickle.gz'];
    for (const [k, name] of names.entries()) {
      await page.evaluate(
        async ([p]) => {
          await window.jupyterapp.commands.execute('docmanager:open', { path: p, factory: 'CUDA Memory Snapshot' });
        },
        [`${tmpPath}/${name}`]
      );
      await expect(page.locator('.jp-CudaMemdiffFile h2', { hasText: name })).toBeVisible();
      // As a person opens one file, then the next: each reaches the panel before the next is opened (the panel
      // names files in the order they arrive, and two parsed at once may arrive either way).
      await expect(page.locator(`${PANEL} [data-cuda-memdiff-side="after"] option[value="f${k}"]`)).toHaveCount(1, {
        timeout: 60000
      });
    }
    await expect(page.locator('.jp-CudaMemdiffFile-totals').last()).toContainText('481 MiB');
    const panel = page.locator(PANEL);
    await expect(panel).toBeVisible();
    // the second file is shown on its own (against an empty device), not against an unrelated earlier file
    await expect(panel.locator('[data-cuda-memdiff-side="after"]')).toHaveValue('f1');
    await expect(panel.locator('[data-cuda-memdiff-side="before"]')).toHaveValue('empty');
    await expect(panel.getByRole('status')).toHaveText(
      'Born 481 MiB in 38 blocks, freed 0 B in 0 blocks, net +481 MiB'
    );
    // the user picks the first as Before: the graphs `preds` keeps, 321 MiB
    await panel.locator('[data-cuda-memdiff-side="before"]').selectOption('f0');
    await expect(panel.getByRole('status')).toHaveText(
      'Born 321 MiB in 26 blocks, freed 0 B in 0 blocks, net +321 MiB'
    );
    await expect(panel.locator('[data-cuda-memdiff-site]').first()).toHaveAttribute(
      'data-cuda-memdiff-site',
      /3447429980\.py:3$/
    );
  });

  test('say clearly when a file is not a snapshot', async ({ page, tmpPath }) => {
    await page.contents.uploadContent('not a pickle', 'text', `${tmpPath}/notes.pickle`);
    await page.evaluate(
      async ([p]) => {
        await window.jupyterapp.commands.execute('docmanager:open', { path: p, factory: 'CUDA Memory Snapshot' });
      },
      [`${tmpPath}/notes.pickle`]
    );
    await expect(page.locator('.jp-CudaMemdiffFile-error')).toHaveText(/^Cannot read this file: not a snapshot/);
  });
});

test.describe('themes', () => {
  test('the panel in the light and dark themes', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await page.setViewportSize({ width: 1400, height: 1000 });
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const panel = page.locator(PANEL);
    await panel
      .getByRole('listbox', { name: 'Cells' })
      .getByRole('option', { name: /^\[3\] preds = \[\]/ })
      .click();
    await panel.locator('.jp-CudaMemdiffSite-head').first().click();
    await page.mouse.move(0, 0);
    expect(await screenshotOf(panel)).toMatchSnapshot('diff-panel-light.png');
    await page.theme.setDarkTheme();
    await page.mouse.move(0, 0);
    expect(await screenshotOf(panel)).toMatchSnapshot('diff-panel-dark.png');
  });
});

test.describe('export', () => {
  test('writes the session folder and a pickle of the shown snapshot', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    // Looking for a free name must not ask for paths that are not there: each such request is a red 404
    // in the browser console and a warning in the server log.
    const missing: string[] = [];
    page.on('response', response => {
      if (response.status() === 404 && response.url().includes('/api/contents/')) {
        missing.push(response.url());
      }
    });
    const exported = await page.evaluate(async () => {
      const folder = (await window.jupyterapp.commands.execute('cuda-memdiff:export-session')) as string;
      const listing = await window.jupyterapp.serviceManager.contents.get(folder);
      const manifest = await window.jupyterapp.serviceManager.contents.get(`${folder}/manifest.json`, {
        type: 'file',
        format: 'text',
        content: true
      });
      return {
        folder,
        names: (listing.content as { name: string }[]).map(f => f.name).sort(),
        manifest: JSON.parse(manifest.content as string)
      };
    });
    expect(exported.folder).toBe(`${tmpPath}/replay_demo-cuda-memdiff-session`);
    // Each cell's snapshot, and the role of each of its blocks (the leak finder's fixes read them).
    expect(exported.names).toEqual([
      'cell00.pickle.gz',
      'cell00.roles.json',
      'cell01.pickle.gz',
      'cell01.roles.json',
      'cell02.pickle.gz',
      'cell02.roles.json',
      'cell03.pickle.gz',
      'cell03.roles.json',
      'manifest.json'
    ]);
    expect(exported.manifest.cells.map((c: any) => c.roles_file)).toEqual(
      [0, 1, 2, 3].map(k => `cell0${k}.roles.json`)
    );
    const recorded = JSON.parse(
      require('fs').readFileSync(
        path.resolve(__dirname, '../../test-data/live/gpu_memory_demo--holders/manifest.json'),
        'utf-8'
      )
    );
    expect(exported.manifest.cells.map((c: any) => c.after.allocated)).toEqual(
      recorded.cells.map((c: any) => c.after.allocated)
    );
    expect(exported.manifest.cells.map((c: any) => c.index)).toEqual([1, 2, 4, 6]);

    await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
    const saved = await page.evaluate(async () => {
      const p = (await window.jupyterapp.commands.execute('cuda-memdiff:save-snapshot')) as string;
      const model = await window.jupyterapp.serviceManager.contents.get(p, {
        format: 'base64',
        type: 'file',
        content: true
      });
      const head = atob((model.content as string).replace(/\s/g, '').slice(0, 4)).charCodeAt(0);
      return { path: p, size: model.size, head };
    });
    // A plain pickle (protocol 2 and up start with 0x80), as torch.cuda._memory_viz reads; it read no gzip.
    expect(saved.path).toBe(`${tmpPath}/replay_demo-cell4.pickle`);
    expect(saved.head).toBe(0x80);
    expect(saved.size).toBeGreaterThan(1000);

    // Again: the names taken now get the next free suffix.
    const again = await page.evaluate(async () => [
      (await window.jupyterapp.commands.execute('cuda-memdiff:export-session')) as string,
      (await window.jupyterapp.commands.execute('cuda-memdiff:save-snapshot')) as string
    ]);
    expect(again).toEqual([`${tmpPath}/replay_demo-cuda-memdiff-session-2`, `${tmpPath}/replay_demo-cell4-2.pickle`]);
    expect(missing).toEqual([]);
  });

  test('numbers the kernels 1 and 2 across a restart, as the CLI names them', async ({ page, tmpPath }) => {
    test.setTimeout(240000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    await restartKernel(page);
    await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
      timeout: 60000
    });
    await page.notebook.runCell(CODE_CELLS[0]);
    // Kernel 2's run is in the session once the chart shows it beside kernel 1's four.
    await openPanel(page);
    await expect(panelSection(page, 'chart').getByRole('listbox', { name: 'Cells' }).getByRole('option')).toHaveCount(
      CODE_CELLS.length + 1,
      { timeout: 60000 }
    );
    const { folder, root } = await page.evaluate(async () => ({
      folder: (await window.jupyterapp.commands.execute('cuda-memdiff:export-session')) as string,
      root: JSON.parse(document.getElementById('jupyter-config-data')!.textContent!).serverRoot as string
    }));
    const dir = path.join(root, folder);
    const manifest = JSON.parse(require('fs').readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    expect(manifest.cells.map((c: any) => c.kernel_session)).toEqual([1, 1, 1, 1, 2]);
    // The CLI's --json says what its table says: kernel 2 after the restart.
    const cli = (...args: string[]) =>
      execFileSync(process.execPath, [path.resolve(__dirname, '../../bin/cuda-memdiff.js'), ...args, dir], {
        encoding: 'utf-8'
      });
    const session = JSON.parse(cli('session', '--json'));
    expect(session.cells.map((c: any) => c.kernel_session)).toEqual([1, 1, 1, 1, 2]);
    expect(cli('session')).toMatch(/kernel restarted: kernel 2 starts from an empty device/);
  });
});
