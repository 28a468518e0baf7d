import { expect, test } from '@jupyterlab/galata';

// Find Leaking Cell on a 40,500-block session (the kernel "cuda-memdiff-replay-large"
// replays the many_blocks H200 recording): the longest main-thread task while it
// ranks, seen by a PerformanceObserver for 'longtask' in the page. Target: under
// 100 ms, which the ranking meets by running in the engine worker.
const COMMAND = 'cuda-memdiff:find-leaking-cell';
const CELLS = 4;
const MARKER = '/tmp/cuda-memdiff-replay-large.marker';

test('Find Leaking Cell on a 40,000-block session', async ({ page }) => {
  test.setTimeout(480000);
  await page.notebook.createNew('leaks-bench.ipynb', { kernel: 'cuda-memdiff-replay-large' });
  await expect(page.locator('.jp-CudaMemdiffStatus')).toContainText('replaying a recorded session', {
    timeout: 120000
  });
  // The replay kernel matches cells by source: its launch.py names them so, the last one creating a marker file.
  const source = (k: number) =>
    k < CELLS - 1 ? `step_${k} = ${k}` : `step_${k} = ${k}\nopen('${MARKER}', 'w').close()`;
  await page.notebook.setCell(0, 'code', source(0));
  for (let k = 1; k < CELLS; k++) {
    await page.notebook.addCell('code', source(k));
  }
  for (let k = 0; k < CELLS; k++) {
    await page.notebook.runCell(k);
    const badge = (await page.notebook.getCellLocator(k))!.locator(':scope > .jp-CudaMemdiffBadge');
    await expect(badge).toHaveAttribute('data-cuda-memdiff-net-bytes', /^-?\d+$/, { timeout: 120000 });
  }
  // Once as from the notebook toolbar with the panel closed (the command opens it), once with it open.
  const measure = () =>
    page.evaluate(async command => {
      const tasks: { start: number; duration: number }[] = [];
      const observer = new PerformanceObserver(list => {
        for (const e of list.getEntries()) {
          tasks.push({ start: e.startTime, duration: e.duration });
        }
      });
      observer.observe({ type: 'longtask' });
      const started = performance.now();
      const result = (await window.jupyterapp.commands.execute(command)) as { label: string | null };
      // the findings on screen: one more frame
      await new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));
      const ms = performance.now() - started;
      // entries are delivered asynchronously: give the observer a moment
      await new Promise(resolve => setTimeout(resolve, 500));
      observer.disconnect();
      const during = tasks.filter(t => t.start + t.duration >= started && t.start <= started + ms);
      return {
        ms,
        label: result.label,
        longest: during.reduce((n, t) => Math.max(n, t.duration), 0),
        count: during.length,
        status: document.querySelector('#cuda-memdiff-panel .jp-CudaMemdiffLeaks-status')?.textContent ?? ''
      };
    }, COMMAND);
  for (const panel of ['closed', 'open']) {
    if (panel === 'open') {
      // the panel shows its chart and the latest cell's diff first: that is the panel's work, not the ranking's
      await page.waitForTimeout(3000);
    }
    const figures = await measure();
    // the ranking is on screen: many_blocks keeps everything in named lists
    expect(figures.status).toMatch(/No cell leaks/);
    // eslint-disable-next-line no-console
    console.log(
      `Find Leaking Cell on a 40,500-block session, panel ${panel}: longest main-thread task ${figures.longest.toFixed(0)} ms ` +
        `(target < 100 ms), ${figures.count} long tasks, ${(figures.ms / 1000).toFixed(2)} s from the command to the findings on screen`
    );
  }
});
