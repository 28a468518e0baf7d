/**
 * Restart & Run All on the replayed demo with a long cell in it: each cell's
 * badge comes as that cell ends, while the cells after it still wait; until
 * then a recorded cell keeps its earlier kernel's badge, dimmed (as the README
 * says), and a cell not in the recording says so once it has run. Each
 * cell's prompt and badge are sampled in the page every 20 ms, as a person
 * watching the notebook would see them.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import { BADGE } from './demo';

const RECORDING = path.resolve(__dirname, '../../test-data/live/gpu_memory_demo--holders/manifest.json');
const SOURCES: string[] = JSON.parse(fs.readFileSync(RECORDING, 'utf-8')).cells.map(
  (c: { source: string }) => c.source
);
const SLEEP_S = 6;
/** The demo's four recorded cells with a long cell after the first, and a cell of the user's at the end. */
const CELLS = [SOURCES[0], `import time\ntime.sleep(${SLEEP_S})`, ...SOURCES.slice(1), "print('mine')"];
const RECORDED = [0, 2, 3, 4];
const SLOW = 1;
const MINE = 5;
const NOTEBOOK = 'runall.ipynb';

/** What a cell showed at one moment: its prompt and its badge. */
interface ISample {
  t: number;
  cell: number;
  prompt: string;
  badge: 'none' | 'stale' | 'figures' | 'note';
  text: string;
}

type Page = Parameters<Parameters<typeof test>[2]>[0]['page'];

function notebookJson(): string {
  const cells = CELLS.map((source, k) => ({
    cell_type: 'code',
    id: `runall-${k}`,
    metadata: {},
    source,
    execution_count: null,
    outputs: []
  }));
  return JSON.stringify({
    cells,
    metadata: {
      kernelspec: {
        display_name: 'Python 3 (replaying an H200 session)',
        language: 'python',
        name: 'cuda-memdiff-replay'
      },
      language_info: { name: 'python' }
    },
    nbformat: 4,
    nbformat_minor: 5
  });
}

/** Start sampling every cell's prompt and badge in the page; `samples` reads what was seen since. */
async function startSampling(page: Page): Promise<() => Promise<ISample[]>> {
  await page.evaluate(badgeSelector => {
    const w = window as unknown as { __samples: ISample[]; __t0: number };
    w.__samples = [];
    w.__t0 = performance.now();
    const last = new Map<number, string>();
    setInterval(() => {
      const cells = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
      cells.forEach((cell, k) => {
        const prompt = (cell.querySelector('.jp-InputArea-prompt')?.textContent ?? '').trim();
        const badge = cell.querySelector<HTMLElement>(`:scope > ${badgeSelector}`);
        const kind = !badge
          ? 'none'
          : badge.classList.contains('jp-CudaMemdiffBadge-stale')
            ? 'stale'
            : badge.dataset.level === 'note'
              ? 'note'
              : 'figures';
        const text = badge?.textContent ?? '';
        const key = `${prompt}|${kind}|${text}`;
        if (last.get(k) !== key) {
          last.set(k, key);
          w.__samples.push({ t: performance.now() - w.__t0, cell: k, prompt, badge: kind, text } as ISample);
        }
      });
    }, 20);
  }, BADGE);
  return () => page.evaluate(() => (window as unknown as { __samples: ISample[] }).__samples);
}

/** Whether the element shows inside the notebook's visible area, with a size. */
async function showsInNotebook(page: Page, element: Locator): Promise<boolean> {
  const box = await element.boundingBox();
  const notebook = await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-notebook').boundingBox();
  return (
    !!box &&
    !!notebook &&
    box.width > 0 &&
    box.height > 0 &&
    box.y >= notebook.y - 1 &&
    box.y + box.height <= notebook.y + notebook.height + 1
  );
}

/** The first moment, from `since` on, a cell showed something; Infinity when it never did. */
function firstTime(samples: ISample[], cell: number, seen: (s: ISample) => boolean, since = 0): number {
  return samples.find(s => s.cell === cell && s.t >= since && seen(s))?.t ?? Infinity;
}

const numbered = (s: ISample) => /^\[\d+\]:$/.test(s.prompt);

test.use({ viewport: { width: 1280, height: 1000 } });

test('Restart & Run All badges each cell as it ends, old badges dimmed until then', async ({ page, tmpPath }) => {
  test.setTimeout(300000);
  await page.contents.uploadContent(notebookJson(), 'text', `${tmpPath}/${NOTEBOOK}`);
  await page.notebook.openByPath(`${tmpPath}/${NOTEBOOK}`);
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
    timeout: 60000
  });
  const cell = async (k: number) => (await page.notebook.getCellLocator(k))!;
  const badge = async (k: number) => (await cell(k)).locator(`:scope > ${BADGE}`);
  await page.notebook.run();
  await expect(page.locator(`${BADGE}[data-cuda-memdiff-net-bytes]`)).toHaveCount(RECORDED.length, {
    timeout: 60000
  });
  await expect(await badge(MINE)).toHaveText('not in the recording');

  const samples = await startSampling(page);
  // Restart & Run All as a person does: the command, then the dialog. (Galata answers the restart's POST
  // with 201, which JupyterLab refuses: the request goes to the server untouched; see demo.ts.)
  const restart = /\/api\/kernels\/[^/?]+\/restart/;
  await page.route(restart, route => route.continue());
  await page.evaluate(() => {
    void window.jupyterapp.commands.execute('notebook:restart-run-all');
  });
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Confirm Kernel Restart' }).click();

  // The first cell's badge, the new kernel's, comes while the long cell after it still runs.
  const first = await badge(RECORDED[0]);
  await expect(first).not.toHaveClass(/jp-CudaMemdiffBadge-stale/, { timeout: 60000 });
  await expect(first).toHaveAttribute('data-cuda-memdiff-net-bytes', /^\d+$/);
  expect(await showsInNotebook(page, first)).toBe(true);
  await expect((await cell(SLOW)).locator('.jp-InputArea-prompt')).toHaveText('[*]:');
  // The cells still waiting show their earlier kernel's figures, dimmed: not nothing.
  for (const k of RECORDED.slice(1)) {
    await expect(await badge(k)).toHaveClass(/jp-CudaMemdiffBadge-stale/);
    expect(await showsInNotebook(page, await badge(k))).toBe(true);
  }
  await page.screenshot({ path: test.info().outputPath('runall-midway.png') });

  // Every cell ends with the new kernel's word on it: figures, or that it is not in the recording.
  for (const k of RECORDED) {
    await expect(await badge(k)).not.toHaveClass(/jp-CudaMemdiffBadge-stale/, { timeout: 60000 });
  }
  for (const k of [SLOW, MINE]) {
    await expect(await badge(k)).toHaveText('not in the recording', { timeout: 60000 });
    expect(await showsInNotebook(page, await badge(k))).toBe(true);
  }
  const seen = await samples();
  // The restart: the first cell's badge dims.
  const restarted = firstTime(seen, RECORDED[0], s => s.badge === 'stale');
  const queued = firstTime(seen, RECORDED[0], s => s.prompt === '[*]:', restarted);
  const replied = (k: number) => firstTime(seen, k, numbered, queued);
  for (const k of RECORDED) {
    const fresh = firstTime(seen, k, s => s.badge === 'figures', restarted);
    // Never without a badge on the way: dimmed until its own run's figures came.
    expect(seen.filter(s => s.cell === k && s.t >= restarted && s.t < fresh && s.badge !== 'stale')).toEqual([]);
    // The figures came with the cell's end, not once the cells behind it had ended.
    const later = RECORDED.filter(j => j > k).map(replied);
    if (later.length) {
      expect(fresh, `cell ${k}: replied at ${replied(k)} ms`).toBeLessThan(Math.max(...later));
    }
  }
  // The long cell's note came before the cells after it ended.
  expect(firstTime(seen, SLOW, s => s.badge === 'note', restarted)).toBeLessThan(
    replied(RECORDED[RECORDED.length - 1])
  );
});
