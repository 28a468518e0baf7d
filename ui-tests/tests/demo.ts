/**
 * Page-object helpers shared by the specs: the demo notebook replayed from
 * its H200 recording (kernel "cuda-memdiff-replay", see demo/jupyter-path/).
 */
import AxeBuilder from '@axe-core/playwright';
import { expect, IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator, Response } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import { contrastRatio, rgbOf, seenOver } from './colourvision';

export const NOTEBOOK = 'replay_demo.ipynb';
export const PANEL = '#cuda-memdiff-panel';
export const BADGE = '.jp-CudaMemdiffBadge';
/** Notebook positions of the demo's four code cells (markdown between them). */
export const CODE_CELLS = [1, 2, 4, 6];

/** Upload and open the demo notebook; wait until its kernel replays the recording. */
export async function openReplayedDemo(page: IJupyterLabPageFixture, tmpPath: string): Promise<void> {
  await page.contents.uploadFile(path.resolve(__dirname, 'notebooks', NOTEBOOK), `${tmpPath}/${NOTEBOOK}`);
  await page.notebook.openByPath(`${tmpPath}/${NOTEBOOK}`);
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
    timeout: 60000
  });
}

/** Run every cell of the opened demo and wait for the four badges. */
export async function runReplayedDemo(page: IJupyterLabPageFixture): Promise<void> {
  await page.notebook.run();
  // Badges with figures; the last cell, not in the recording, says so instead.
  await expect(page.locator(`${BADGE}[data-cuda-memdiff-net-bytes]`)).toHaveCount(CODE_CELLS.length, {
    timeout: 60000
  });
}

/** The training session the H200 recorded with the helper's roles (kernel "cuda-memdiff-replay-roles"). */
export const TRAINING = path.resolve(__dirname, '../../test-data/roles/training_roles--python');

/** The training recording's manifest: its cells, with each one's bytes by role. */
export const TRAINING_MANIFEST = JSON.parse(fs.readFileSync(path.join(TRAINING, 'manifest.json'), 'utf-8'));

/**
 * A new notebook on the replayed training session, one code cell per cell of
 * the recording, all run: resolves once every badge has its figures.
 */
export async function runReplayedTraining(page: IJupyterLabPageFixture): Promise<void> {
  const cells: number = TRAINING_MANIFEST.cells.length;
  await page.notebook.createNew('roles.ipynb', { kernel: 'cuda-memdiff-replay-roles' });
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', { timeout: 60000 });
  await page.notebook.setCell(0, 'code', 'step_0 = 0');
  for (let k = 1; k < cells; k++) {
    await page.notebook.addCell('code', `step_${k} = ${k}`);
  }
  await page.notebook.run();
  await expect(page.locator(`${BADGE}[data-cuda-memdiff-net-bytes]`)).toHaveCount(cells, { timeout: 60000 });
}

/** Click a notebook toolbar item by name, opening the overflow menu when the toolbar is too narrow for it. */
export async function clickNotebookToolbarItem(page: IJupyterLabPageFixture, name: string): Promise<void> {
  const button = page.locator(`[data-jp-item-name="${name}"] button`);
  const more = page.locator('.jp-NotebookPanel-toolbar').getByRole('button', { name: 'More commands' });
  const overflowed = !(await button.isVisible());
  if (overflowed) {
    await more.click();
  }
  await button.click();
  if (overflowed) {
    await more.click(); // close the overflow popup again
  }
}

/** The panel's scrolling content: what of the panel a person can see. */
export const PANEL_CONTENT = `${PANEL} .jp-CudaMemdiffPanel-content`;

/** A section of the panel by name: leaks, chart, diff, segments. */
export function panelSection(page: IJupyterLabPageFixture, name: string) {
  return page.locator(`${PANEL} [data-cuda-memdiff-section="${name}"]`);
}

/** Open the panel with its command; resolves to its locator once visible. */
export async function openPanel(page: IJupyterLabPageFixture) {
  await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:open-panel'));
  const panel = page.locator(PANEL);
  await expect(panel).toBeVisible();
  return panel;
}

/**
 * Show the diff of the demo's run [3], the leaking cell's, from the panel's
 * list of cells; resolves to its top allocation site, checked to read as the
 * cell's line before the test changes the notebook.
 */
export async function showLeakingRun(panel: Locator): Promise<Locator> {
  await panel
    .getByRole('listbox', { name: 'Cells' })
    .getByRole('option', { name: /^\[3\] preds = \[\]/ })
    .click();
  const site = panel.locator('[data-cuda-memdiff-site]').first();
  await expect(site.locator('.jp-CudaMemdiffSite-label')).toHaveText('Cell [3], line 3');
  return site;
}

/** Run Find Leaking Cell from the command and wait for its ranking. */
export async function findLeakingCell(page: IJupyterLabPageFixture): Promise<void> {
  await page.evaluate(() => window.jupyterapp.commands.execute('cuda-memdiff:find-leaking-cell'));
  await expect(page.locator(`${PANEL} .jp-CudaMemdiffLeak.jp-mod-top`)).toBeVisible();
}

/**
 * Where an element is against the part of the panel a person sees: true when
 * the element lies wholly inside the panel's visible content box (the panel's
 * own box clips it, the scroll position decides what shows).
 */
export async function isInsideVisiblePanel(
  page: IJupyterLabPageFixture,
  selector: string | ReturnType<IJupyterLabPageFixture['locator']>
): Promise<boolean> {
  const element = typeof selector === 'string' ? page.locator(selector) : selector;
  const box = await element.boundingBox();
  const content = await page.locator(PANEL_CONTENT).boundingBox();
  const panel = await page.locator(PANEL).boundingBox();
  if (!box || !content || !panel) {
    return false;
  }
  const top = Math.max(content.y, panel.y);
  const bottom = Math.min(content.y + content.height, panel.y + panel.height);
  return (
    box.y >= top - 1 &&
    box.y + box.height <= bottom + 1 &&
    box.x >= panel.x - 1 &&
    box.x + box.width <= panel.x + panel.width + 1
  );
}

/**
 * Whether an element lies wholly inside the panel's box, its header and
 * toolbar included, and inside the window: for what is shown above the
 * scrolling content, as the note of a file that could not be read.
 */
export async function isInsidePanelBox(page: IJupyterLabPageFixture, element: Locator): Promise<boolean> {
  const box = await element.boundingBox();
  const panel = await page.locator(PANEL).boundingBox();
  const viewport = page.viewportSize();
  if (!box || !panel || !viewport || box.width === 0 || box.height === 0) {
    return false;
  }
  return (
    box.y >= Math.max(0, panel.y) - 1 &&
    box.y + box.height <= Math.min(viewport.height, panel.y + panel.height) + 1 &&
    box.x >= panel.x - 1 &&
    box.x + box.width <= panel.x + panel.width + 1
  );
}

/**
 * On how many lines `text` is laid out inside `element` (where it lies within
 * one text node: SoftBreaks splits a path only after its slashes); -1 where
 * it is not there.
 */
export async function linesOfText(element: Locator, text: string): Promise<number> {
  return element.evaluate((el, wanted) => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.textContent!.indexOf(wanted);
      if (at >= 0) {
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + wanted.length);
        return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
      }
    }
    return -1;
  }, text);
}

/** Scroll the panel with the mouse wheel until the element is inside it (or give up after `steps` turns). */
export async function wheelUntilInside(
  page: IJupyterLabPageFixture,
  element: ReturnType<IJupyterLabPageFixture['locator']>,
  steps = 40
): Promise<boolean> {
  const content = (await page.locator(PANEL_CONTENT).boundingBox())!;
  await page.mouse.move(content.x + content.width / 2, content.y + content.height / 2);
  for (let i = 0; i < steps; i++) {
    if (await isInsideVisiblePanel(page, element)) {
      return true;
    }
    const box = await element.boundingBox();
    await page.mouse.wheel(0, box && box.y < content.y ? -120 : 120);
    await page.waitForTimeout(50);
  }
  return isInsideVisiblePanel(page, element);
}

/** Drag the splitter on the right sidebar's left edge so the panel gets `width` pixels, as a person would. */
export async function setPanelWidth(page: IJupyterLabPageFixture, width: number): Promise<void> {
  const panel = (await page.locator(PANEL).boundingBox())!;
  const handle = await page.evaluate(left => {
    const handles = Array.from(document.querySelectorAll('#jp-main-split-panel > .lm-SplitPanel-handle'));
    const boxes = handles.map(h => h.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
    boxes.sort((a, b) => Math.abs(a.right - left) - Math.abs(b.right - left));
    const r = boxes[0];
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
  }, panel.x);
  await page.mouse.move(handle.x, handle.y);
  await page.mouse.down();
  await page.mouse.move(handle.x - (width - panel.width) / 2, handle.y, { steps: 4 });
  await page.mouse.move(handle.x - (width - panel.width), handle.y, { steps: 4 });
  await page.mouse.up();
  await expect
    .poll(async () => Math.round((await page.locator(PANEL).boundingBox())!.width))
    .toBeGreaterThan(width - 30);
  await expect.poll(async () => Math.round((await page.locator(PANEL).boundingBox())!.width)).toBeLessThan(width + 30);
}

/** Every element of the extension: the panel, the badges, the toolbar status. */
export const OURS = [PANEL, BADGE, '.jp-CudaMemdiffStatus'];

/** axe-core's colour-contrast check on the extension's elements: what failed, how many nodes passed, what it could not decide. */
export async function contrastOf(page: IJupyterLabPageFixture, selectors: readonly string[] = OURS) {
  // JupyterLab's shell is absolutely positioned, so <body> has no height; with
  // its overflow hidden, axe then takes every element for hidden and checks
  // none of them (only form controls). A body as tall as the window changes
  // nothing on screen and lets axe see what a person sees.
  await page.evaluate(() => (document.body.style.height = '100vh'));
  let builder = new AxeBuilder({ page }).withRules(['color-contrast']);
  for (const selector of selectors) {
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

/**
 * WCAG contrast of an SVG shape's outline (its stroke, over the panel's
 * background where it is translucent) against the panel's background: what
 * tells a shape whose fill is nearly the background's from the panel (WCAG's
 * non-text contrast asks 3:1).
 */
export async function outlineContrast(shape: Locator): Promise<number> {
  const background = rgbOf(await backgroundBehind(shape));
  const stroke = await shape.evaluate(el => getComputedStyle(el).stroke);
  return contrastRatio(seenOver(stroke, background), background);
}

/**
 * The colour the panel shows behind an element: the background of its
 * nearest ancestor that paints one.
 */
export async function backgroundBehind(element: Locator): Promise<string> {
  return element.evaluate(el => {
    const transparent = (css: string) => /^rgba\(.*, 0\)$/.test(css) || css === 'transparent';
    let box = el.parentElement;
    while (box && transparent(getComputedStyle(box).backgroundColor)) {
      box = box.parentElement;
    }
    return getComputedStyle(box ?? document.body).backgroundColor;
  });
}

/** Switch the theme with JupyterLab's command and wait until its colours apply. */
export async function setTheme(page: IJupyterLabPageFixture, theme: string) {
  await page.evaluate(t => window.jupyterapp.commands.execute('apputils:change-theme', { theme: t }), theme);
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-name', theme);
  // the theme's stylesheet swaps in after the attribute
  await page.waitForTimeout(500);
}

/**
 * A screenshot of a part of the page with its native `<select>`s masked: the
 * browser draws their text itself, and Debian's Chromium clips it a
 * character differently from one release to the next (150 and 156 do).
 */
export function screenshotOf(part: Locator): Promise<Buffer> {
  return part.screenshot({ mask: [part.locator('select')] });
}

/** Upload a snapshot file and open it as a person does (its view opens, the panel compares it). */
export async function openSnapshotFile(page: IJupyterLabPageFixture, file: string, tmpPath: string): Promise<void> {
  const target = `${tmpPath}/${path.basename(file)}`;
  await page.contents.uploadFile(file, target);
  await page.evaluate(async p => {
    await window.jupyterapp.commands.execute('docmanager:open', { path: p, factory: 'CUDA Memory Snapshot' });
  }, target);
}

/**
 * Drop server files on the panel as a person does from their desktop: a drop
 * event carrying File objects (the page fetches their bytes; none is opened
 * from the server).
 */
export async function dropOnPanel(page: IJupyterLabPageFixture, files: string[]): Promise<void> {
  await page.evaluate(async (paths: string[]) => {
    const base = window.jupyterapp.serviceManager.serverSettings.baseUrl;
    const transfer = new DataTransfer();
    for (const p of paths) {
      const response = await fetch(`${base}files/${p}`, { cache: 'no-store' });
      transfer.items.add(new File([await response.blob()], p.split('/').pop()!));
    }
    const target = document.querySelector('#cuda-memdiff-panel .jp-CudaMemdiffPanel-content')!;
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  }, files);
}

/**
 * Whether nothing lies over the element where it shows: the topmost element
 * at its corners and centre is the element itself or inside it (a sticky
 * heading over it, or another panel, would be hit instead).
 */
export async function isUncovered(element: Locator): Promise<boolean> {
  return element.evaluate((el: Element) => {
    const r = el.getBoundingClientRect();
    const points = [
      [r.left + 2, r.top + 2],
      [r.left + r.width / 2, r.top + r.height / 2],
      [r.right - 2, r.bottom - 2]
    ];
    return points.every(([x, y]) => {
      const hit = document.elementFromPoint(x, y);
      return hit !== null && (hit === el || el.contains(hit));
    });
  });
}

/** Ask the panel to bring a section into view, as its actions (Show its diff, opening a file) do. */
export async function revealSection(page: IJupyterLabPageFixture, section: string): Promise<void> {
  await page.evaluate(s => {
    const panel = Array.from(window.jupyterapp.shell.widgets('right')).find(w => w.id === 'cuda-memdiff-panel');
    (panel as unknown as { model: { reveal(section: string): void } }).model.reveal(s);
  }, section);
}

/** How far the element's top is below the top of the panel's scrolling content, in pixels. */
export async function topInPanel(page: IJupyterLabPageFixture, element: Locator): Promise<number> {
  const box = (await element.boundingBox())!;
  const content = (await page.locator(PANEL_CONTENT).boundingBox())!;
  return Math.round(box.y - content.y);
}

/**
 * Restart the notebook's kernel as a person does (the command, then the
 * dialog). Galata's kernel tracker answers every POST under /api/kernels,
 * the restart's too, with 201 Created, where the server says 200 OK and
 * JupyterLab takes only 200: its restart then failed in the page ("Invalid
 * response: 201 Created") while the kernel restarted, and what followed
 * depended on timing. The restart goes to the server untouched.
 */
export async function restartKernel(page: IJupyterLabPageFixture): Promise<void> {
  const { answered } = await confirmKernelRestart(page);
  expect((await answered).status()).toBe(200);
}

/**
 * Restart the kernel as restartKernel does, but return once the dialog is
 * confirmed, as a person goes on at once: the server's answer comes later.
 */
export async function confirmKernelRestart(page: IJupyterLabPageFixture): Promise<{ answered: Promise<Response> }> {
  const restart = /\/api\/kernels\/[^/?]+\/restart/;
  await page.route(restart, route => route.continue());
  const answered = page.waitForResponse(r => restart.test(r.url()) && r.request().method() === 'POST');
  // The command waits for the dialog: start it without awaiting, then answer.
  await page.evaluate(() => {
    void window.jupyterapp.commands.execute('notebook:restart-kernel', { activate: false });
  });
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Confirm Kernel Restart' }).click();
  // In an object: returned alone from an async function, the answer would be awaited here.
  return { answered };
}

/**
 * What Chromium gives a screen reader for the elements of `role` inside the
 * first match of `selector`: each one's name and description, from the
 * browser's own accessibility tree (Playwright's name and description
 * computation does not read an SVG element's <title>, which Chromium takes
 * as the name, or as the description beside an aria-label).
 */
export async function accessibilityOf(
  page: IJupyterLabPageFixture,
  selector: string,
  role: string
): Promise<{ name: string; description: string }[]> {
  // Galata's page is a proxy; CDP wants the page itself.
  const cdp = await page.context().newCDPSession(page.context().pages()[0]);
  try {
    const { result } = await cdp.send('Runtime.evaluate', {
      expression: `document.querySelector(${JSON.stringify(selector)})`
    });
    const { nodes } = await cdp.send('Accessibility.queryAXTree', { objectId: result.objectId, role });
    return nodes.map(n => ({ name: String(n.name?.value ?? ''), description: String(n.description?.value ?? '') }));
  } finally {
    await cdp.detach();
  }
}
