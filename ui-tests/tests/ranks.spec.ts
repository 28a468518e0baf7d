import * as path from 'path';
import { expect, test } from '@jupyterlab/galata';

/** A DDP job recorded on an H200: two ranks, rank 1 keeps 64 MiB more at each of 5 steps. */
const DDP = path.resolve(__dirname, '../../test-data/ranks/ddp_one_gpu');

test.describe('multi-rank session', () => {
  test.beforeEach(async ({ page, tmpPath }) => {
    await page.contents.uploadDirectory(DDP, `${tmpPath}/ddp`);
    await page.filebrowser.openDirectory(`${tmpPath}/ddp`);
    // Engine parsing happens in the worker: watch it start.
    const worker = page.waitForEvent('worker', w => w.url().includes('lib_worker_main'));
    await page.locator('.jp-DirListing-item', { hasText: 'ranks.json' }).dblclick();
    await worker;
  });

  test('says which rank grows and from where, and draws it apart from the flat rank', async ({ page }) => {
    const view = page.locator('.jp-CudaMemdiffRanks');
    await expect(view.locator('.jp-CudaMemdiffRanks-verdict')).toHaveText(
      'Rank 1 grows 64.0 MiB per step, from ranks_cuda_job.py:40 _train. Rank 0 is flat.'
    );
    // On screen, rank 1's line ends higher than rank 0's, which stays level.
    const endOf = async (rank: number) => {
      const dots = view.locator(`g[data-rank="${rank}"] circle`);
      await expect(dots).toHaveCount(5);
      const first = await dots.first().boundingBox();
      const last = await dots.last().boundingBox();
      return { rise: first!.y - last!.y };
    };
    expect((await endOf(0)).rise).toBeLessThan(1);
    expect((await endOf(1)).rise).toBeGreaterThan(40);
    await expect(view.locator('g[data-rank="1"] circle').last().locator('title')).toHaveText(
      'Rank 1, step 5: 361 MiB allocated'
    );
    await expect(view).toHaveScreenshot('ranks-view.png', { maxDiffPixelRatio: 0.02 });
  });

  test("lists one rank's points and compares two ranks at a point by site", async ({ page }) => {
    const view = page.locator('.jp-CudaMemdiffRanks');
    const rank = view.getByRole('region', { name: 'One rank' });
    await rank.getByRole('combobox').selectOption('1');
    await expect(rank.locator('tbody tr').nth(4)).toHaveText(/step 5\s*361 MiB\s*\+64\.0 MiB/);

    const compare = view.getByRole('region', { name: 'Two ranks compared' });
    await expect(compare.locator('tbody tr').first()).toHaveText(
      /0 B\s*256 MiB\s*\+256 MiB\s*ranks_cuda_job\.py:40 _train/
    );
    await compare.getByRole('combobox', { name: 'Capture point' }).selectOption({ label: 'step 2' });
    await expect(compare.locator('tbody tr').first()).toHaveText(
      /0 B\s*64\.0 MiB\s*\+64\.0 MiB\s*ranks_cuda_job\.py:40 _train/
    );
    await compare.getByRole('combobox', { name: 'Second rank' }).selectOption({ label: 'rank 0' });
    await expect(compare.getByRole('status')).toHaveText('Both ranks hold the same bytes at every allocation site.');
  });
});
