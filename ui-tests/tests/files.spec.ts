import { expect, test } from '@jupyterlab/galata';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

// The timeline of a snapshot file that carries trace entries, as the user sees
// it: the drawn line ends at the height of what the recording says the last
// cell left allocated, the hover names the event's stack, and clicking two
// cell boundaries shows the same site and bytes as the CLI's diff of the two
// cells' own recorded pickles.
const ROOT = path.resolve(__dirname, '../..');
const REC = path.join(ROOT, 'test-data', 'recordings', 'clean_training--python');
const CLI = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const FACTORY = 'CUDA Memory Snapshot';

test.describe('snapshot file timeline', () => {
  test('draws allocated memory over the events and diffs two clicked moments', async ({ page, tmpPath }) => {
    test.setTimeout(120000);
    const name = 'cell04.pickle.gz';
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
    await expect(view.locator('.jp-CudaMemdiffTimeline-caption')).toContainText('over 2,454 allocation events');
    const forFile = requests.filter(url => url.includes(name));
    expect(forFile.some(url => new URL(url).pathname.endsWith(`/files/${tmpPath}/${name}`))).toBe(true);
    expect(forFile.filter(url => url.includes('/api/contents/') && url.includes('content=1'))).toEqual([]);

    // The line's last point is at the height of what the manifest says cell 4 left allocated.
    const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));
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

    // Hovering shows the event under the pointer with its stack, down to the notebook cell.
    const box = (await chart.boundingBox())!;
    await page.mouse.move(box.x + box.width * (0.5 / 2454), box.y + box.height / 2);
    const hover = view.locator('.jp-CudaMemdiffTimeline-hover');
    await expect(hover).toContainText('Event 1: alloc of 6.75 KiB, then 7.00 KiB allocated');
    await expect(hover.locator('li').first()).toContainText('/tmp/ipykernel_644/1078466348.py:4 in <module>');

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
    const site = expected.groups[0].site;
    await expect(top.locator('td').last()).toHaveText(`${site.filename}:${site.line} in ${site.name}`);
    await expect(top.locator('td').first()).toHaveText(`+${mib(expected.groups[0].net_bytes)}`);
    await result.scrollIntoViewIfNeeded();
    await expect(result).toBeInViewport();
    await page.screenshot({ path: test.info().outputPath('timeline.png') });
  });
});
