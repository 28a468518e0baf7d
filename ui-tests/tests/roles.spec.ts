/**
 * Memory by role where the user looks, on a training session the H200
 * recorded with the helper's roles (kernel "cuda-memdiff-replay-roles", see
 * ui-tests/jupyter-path): the badge tooltip breaks each cell's change down by
 * role, the chart stacks allocated memory by role, the diff groups by role
 * then by site, and the segment map colours blocks by role. The replay kernel
 * sends each block's role from the recording's cellNN.roles.json.
 */
import { expect, test } from '@jupyterlab/galata';
import { execFileSync } from 'child_process';
import * as path from 'path';
import {
  BADGE,
  CODE_CELLS,
  contrastOf,
  findLeakingCell,
  isInsideVisiblePanel,
  openPanel,
  openReplayedDemo,
  PANEL,
  panelSection,
  runReplayedDemo,
  runReplayedTraining,
  setTheme,
  TRAINING,
  TRAINING_MANIFEST
} from './demo';

const CLI = path.resolve(__dirname, '../../bin/cuda-memdiff.js');

/** What the command-line tool (the same engine) says of the eval pass's change by role, on the recorded files. */
function recordedDiffByRole(format: 'json' | 'text'): string {
  const files = ['cell03.pickle.gz', 'cell04.pickle.gz'].map(f => path.join(TRAINING, f));
  return execFileSync('node', [CLI, 'diff', ...files, '--by', 'role', ...(format === 'json' ? ['--json'] : [])], {
    encoding: 'utf-8'
  });
}

test.describe('memory by role', () => {
  test('the badge tooltip breaks the cell\u2019s change down by role', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedTraining(page);
    // the training steps (cell 3) left AdamW's state, the gradients and cuBLAS's workspaces
    const training = (await page.notebook.getCellLocator(3))!.locator(`:scope > ${BADGE}`);
    await training.scrollIntoViewIfNeeded();
    await expect(training).toBeVisible();
    const byRole = 'By role: +65.0 MiB workspace, +10.1 MiB optimizer state, +5.06 MiB gradient, +512 B user.';
    await expect(training).toHaveAttribute('title', new RegExp(byRole.replace(/[.+]/g, '\\$&')));
    // screen readers get the same words as the tooltip
    await expect(training).toHaveAttribute('aria-label', new RegExp(byRole.replace(/[.+]/g, '\\$&')));
    // the eval pass outside no_grad (cell 4) left activations, which its graph keeps for backward
    const evalPass = (await page.notebook.getCellLocator(4))!.locator(`:scope > ${BADGE}`);
    await expect(evalPass).toHaveAttribute('title', /By role: \+8\.51 MiB activation, -492 KiB user\./);
    await expect(evalPass).toHaveAttribute(
      'title',
      /After it: 65\.0 MiB workspace, 10\.1 MiB optimizer state, 8\.51 MiB activation/
    );
  });

  test('the chart stacks allocated memory by role', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedTraining(page);
    const panel = await openPanel(page);
    const chart = panelSection(page, 'chart').locator('.jp-CudaMemdiffChart');
    await expect(chart).toBeVisible();
    const toggle = chart.getByRole('button', { name: 'by role' });
    await toggle.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, toggle)).toBe(true);
    await expect(chart.locator('.jp-CudaMemdiffChart-role')).toHaveCount(0);
    await toggle.click();
    await expect(toggle).toHaveAttribute('aria-pressed', 'true');
    // every role the session used has a band, in the kernel's order, and a key in the legend
    const used = [
      'parameter',
      'buffer',
      'gradient',
      'optimizer_state',
      'activation',
      'output_cache',
      'user',
      'workspace'
    ];
    const areas = chart.locator('.jp-CudaMemdiffChart-role');
    await expect(areas).toHaveCount(used.length);
    expect(await areas.evaluateAll(els => els.map(e => [...e.classList].find(c => c.startsWith('jp-mod-'))))).toEqual(
      used.map(r => `jp-mod-${r}`)
    );
    const legend = chart.locator('.jp-CudaMemdiffChart-legend');
    await expect(legend).toContainText('optimizer state');
    await expect(legend).toContainText('activation');
    // drawn, in colours a person can tell apart, inside the part of the panel they see
    const fills = await areas.evaluateAll(els => els.map(e => getComputedStyle(e).fill));
    expect(new Set(fills).size).toBeGreaterThanOrEqual(6);
    const workspace = chart.locator('.jp-CudaMemdiffChart-role.jp-mod-workspace');
    const box = (await workspace.boundingBox())!;
    expect(box.height).toBeGreaterThan(10);
    expect(await isInsideVisiblePanel(page, workspace)).toBe(true);
    // a cell's band names its roles on hover, and to a screen reader
    await expect(chart.locator('.jp-CudaMemdiffChart-band').nth(4).locator('title')).toContainText(
      '8.51 MiB activation'
    );
    await expect(chart.getByRole('option').nth(4)).toHaveAccessibleName(/ 8\.51 MiB activation/);
    const contrast = await contrastOf(page, ['.jp-CudaMemdiffChart-legend']);
    expect(contrast.violations).toEqual([]);
    expect(await chart.screenshot()).toMatchSnapshot('chart-by-role.png');
    // and back to the lines alone
    await toggle.click();
    await expect(areas).toHaveCount(0);
    expect(panel).toBeTruthy();
  });

  test('the diff groups by role then by site, and the segment map colours by role', async ({ page }) => {
    test.setTimeout(240000);
    await runReplayedTraining(page);
    await openPanel(page);
    // the eval pass outside no_grad (cell 4) against the training steps before it
    const chart = panelSection(page, 'chart').locator('.jp-CudaMemdiffChart');
    await chart.locator('.jp-CudaMemdiffChart-band').nth(4).click();
    const diff = panelSection(page, 'diff');
    const byRole = diff.getByRole('radio', { name: 'role, then site' });
    await byRole.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, byRole)).toBe(true);
    await byRole.check();
    await expect(diff).toContainText('Diff by role, then allocation site');
    // the roles and their bytes are the recording's, as the command-line tool reads its files
    const recorded = JSON.parse(recordedDiffByRole('json')) as { roles: { role: string; net_bytes: number }[] };
    const rows = diff.getByRole('list', { name: 'Roles' }).locator(':scope > li');
    await expect(rows).toHaveCount(recorded.roles.length);
    expect(
      await rows.evaluateAll(els => els.map(e => [e.dataset.cudaMemdiffRole, Number(e.dataset.cudaMemdiffNetBytes)]))
    ).toEqual(recorded.roles.map(r => [r.role, r.net_bytes]));
    // and the text a person reads is the same figure the tool prints: "+8.01 MiB ... activation"
    const activationLine = recordedDiffByRole('text')
      .split('\n')
      .find(line => / activation$/.test(line))!;
    const net = activationLine.trim().split(/\s{2,}/)[0];
    const activation = rows.first();
    const head = activation.locator(':scope > button');
    await expect(head.locator('.jp-CudaMemdiffSite-net')).toHaveText(net);
    await expect(head.locator('.jp-CudaMemdiffRole-label')).toHaveText('activation');
    await head.click();
    const sites = activation.getByRole('list', { name: 'Allocation sites of activation' });
    await expect(sites.locator('.jp-CudaMemdiffSite')).toHaveCount(1);
    // the one line that made them: the eval pass's line 2 (the recording's cell 5)
    await expect(sites.locator('.jp-CudaMemdiffSite-label')).toHaveText(/(Cell \[5\], line 2|ipython-input-5-\w+>:2)/);
    expect(await isInsideVisiblePanel(page, head.locator('.jp-CudaMemdiffSite-net'))).toBe(true);
    // the badge said +8.51 MiB activation: the rest is `x`, made before and saved by this graph
    await expect(diff.locator('.jp-CudaMemdiffDiff-roleMoves')).toContainText('(512 KiB from user to activation)');
    await page.mouse.move(0, 0);
    expect(await diff.screenshot()).toMatchSnapshot('diff-by-role.png');

    // the segment map of the eval pass, coloured by role with a legend of each role's bytes
    const segments = panelSection(page, 'segments');
    const colour = segments.getByRole('button', { name: 'colour by role' });
    await colour.scrollIntoViewIfNeeded();
    await colour.click();
    await expect(colour).toHaveAttribute('aria-pressed', 'true');
    const legend = segments.getByRole('list', { name: 'Colours of the segment map' });
    const held = Object.entries(TRAINING_MANIFEST.cells[4].roles.bytes as Record<string, number>).filter(
      ([, n]) => n > 0
    );
    await expect(legend.locator('.jp-CudaMemdiffSegments-role')).toHaveCount(held.length);
    await expect(legend).toContainText('activation (8.51 MiB)');
    await expect(legend).toContainText('optimizer state (10.1 MiB)');
    const map = segments.locator('.jp-CudaMemdiffSegments svg');
    await expect(map).toHaveAttribute('aria-label', /blocks coloured by role$/);
    const activationBlocks = map.locator('.jp-CudaMemdiffSegments-block.jp-mod-activation');
    expect(await activationBlocks.count()).toBeGreaterThan(0);
    // one colour per role, the chart's: a segment block and the chart's band of a role are filled alike
    await chart.getByRole('button', { name: 'by role' }).click();
    const fillOf = (loc: ReturnType<typeof map.locator>) => loc.first().evaluate(e => getComputedStyle(e).fill);
    expect(await fillOf(activationBlocks)).toBe(
      await fillOf(chart.locator('.jp-CudaMemdiffChart-role.jp-mod-activation'))
    );
    const fills = await map
      .locator('.jp-CudaMemdiffSegments-block.jp-CudaMemdiffSegments-role')
      .evaluateAll(els => new Set(els.map(e => getComputedStyle(e).fill)).size);
    expect(fills).toBeGreaterThanOrEqual(5);
    const contrast = await contrastOf(page, ['.jp-CudaMemdiffSegments-legend', '.jp-CudaMemdiffRoles']);
    expect(contrast.violations).toEqual([]);
    await segments.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    expect(await segments.screenshot()).toMatchSnapshot('segments-by-role.png');
    // the same colours read on the dark theme too
    await setTheme(page, 'JupyterLab Dark');
    const dark = await contrastOf(page, ['.jp-CudaMemdiffSegments-legend', '.jp-CudaMemdiffRoles']);
    expect(dark.violations).toEqual([]);
    expect(await segments.screenshot()).toMatchSnapshot('segments-by-role-dark.png');
    await setTheme(page, 'JupyterLab Light');
  });

  test('the leak finder says what the leaked memory is for', async ({ page }) => {
    test.setTimeout(180000);
    await runReplayedTraining(page);
    await findLeakingCell(page);
    // the eval pass kept outside no_grad: the command-line tool words the same finding from the recorded files
    const cli = execFileSync('node', [CLI, 'leaks', TRAINING], { encoding: 'utf-8' });
    const reason = / {2}- (\S+ \S+) of it is tensors saved for backward by a live autograd graph/.exec(cli)!;
    const top = page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`);
    await expect(top).toContainText(`${reason[1]} of it is tensors saved for backward by a live autograd graph.`);
    const line = top.getByText(/of it is tensors saved for backward/);
    await line.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, line)).toBe(true);
  });
});

test.describe('memory by role in the demo', () => {
  // The demo is what a new user meets first: its recording carries roles (test-data/live/README.md), so the
  // tooltip, the chart and the leak finder say what the memory is for there too.
  const DEMO = path.resolve(__dirname, '../../test-data/live/gpu_memory_demo--holders');

  test('the demo says what each cell\u2019s memory is for', async ({ page, tmpPath }) => {
    test.setTimeout(180000);
    await openReplayedDemo(page, tmpPath);
    await runReplayedDemo(page);
    // the evaluation outside no_grad: its graph's activations, and cuBLAS's workspace from the first matmul
    const preds = (await page.notebook.getCellLocator(CODE_CELLS[2]))!.locator(`:scope > ${BADGE}`);
    await preds.scrollIntoViewIfNeeded();
    await expect(preds).toBeVisible();
    // and that 32.0 MiB of that activation are `batches`, allocated before and now saved for backward
    await expect(preds).toHaveAttribute(
      'title',
      /By role: \+288 MiB activation, \+33\.0 MiB workspace\.\nOf it, blocks allocated earlier changed role: 32\.0 MiB from user to activation \(the diff by role counts only blocks born and freed\)\./
    );
    // the chart stacks the session by role, inside the part of the panel the user sees
    await openPanel(page);
    const chart = panelSection(page, 'chart').locator('.jp-CudaMemdiffChart');
    // the same cell's diff by role: born blocks say +256 MiB activation and +32.0 MiB user, and a note says
    // why the badge said +288 MiB activation: `batches`, allocated by the cell before, were saved for backward
    await chart.locator('.jp-CudaMemdiffChart-band').nth(2).click();
    const diff = panelSection(page, 'diff');
    await diff.getByRole('radio', { name: 'role, then site' }).check();
    const note = diff.locator('.jp-CudaMemdiffDiff-roleMoves');
    await expect(note).toHaveText(
      'Blocks allocated earlier changed role (32.0 MiB from user to activation): the roles above count only blocks born and freed, while the change in each role\u2019s total (a cell badge\u2019s figures) counts these too.'
    );
    await note.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, note)).toBe(true);
    const toggle = chart.getByRole('button', { name: 'by role' });
    await toggle.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, toggle)).toBe(true);
    await toggle.click();
    const activation = chart.locator('.jp-CudaMemdiffChart-role.jp-mod-activation');
    await expect(activation).toHaveCount(1);
    expect((await activation.boundingBox())!.height).toBeGreaterThan(10);
    expect(await isInsideVisiblePanel(page, activation)).toBe(true);
    // the leak finder splits the leak by role, as the command-line tool does from the recorded files
    await findLeakingCell(page);
    const cli = execFileSync('node', [CLI, 'leaks', DEMO], { encoding: 'utf-8' });
    const saved = / {2}- (\S+ \S+) of it is tensors saved for backward by a live autograd graph/.exec(cli)!;
    const top = page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`);
    const line = top.getByText(`${saved[1]} of it is tensors saved for backward by a live autograd graph.`);
    await line.scrollIntoViewIfNeeded();
    expect(await isInsideVisiblePanel(page, line)).toBe(true);
  });
});
