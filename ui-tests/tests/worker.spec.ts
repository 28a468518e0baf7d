import { expect, test } from '@jupyterlab/galata';

/**
 * The engine worker in the built extension: the bundler must emit the worker
 * script, and it must load and run from where JupyterLab serves the
 * extension's chunks. Views test what the user sees through it; this test
 * pins the plumbing, so a build change that breaks it fails here by name.
 */
test.describe('engine worker', () => {
  test('starts lazily, then runs operations in a real Web Worker', async ({ page }) => {
    const workersAtLoad = page.workers().map(w => w.url());
    expect(workersAtLoad.filter(url => url.includes('lib_worker_main'))).toEqual([]);

    const started = page.waitForEvent('worker', w => w.url().includes('lib_worker_main'));
    const answer = await page.evaluate(async () => {
      // The service is looked up by its token's name: the test cannot import
      // the extension's Token object, and lumino keys services by it.
      const registry = (window.jupyterapp as any).pluginRegistry;
      const token = [...registry._services.keys()].find((t: any) => t.name === 'jupyterlab-cuda-memdiff:IEngineWorker');
      const engine = await registry.resolveRequiredService(token);
      return { inWorker: engine.inWorker, where: await engine.call('where') };
    });
    expect(answer).toEqual({ inWorker: true, where: { worker: true } });
    expect((await started).url()).toMatch(
      /\/lab\/extensions\/jupyterlab-cuda-memdiff\/static\/lib_worker_main_js\.[0-9a-f]+\.js$/
    );
  });
});
