/**
 * Starts the engine worker in the browser. The `new URL(..., import.meta.url)`
 * form is what webpack 5 (under `jupyter labextension build`) recognises: it
 * bundles main.js and its imports as a separate script next to the
 * extension's other chunks. Only the worker plugin imports this module, so
 * Node and jest, which cannot parse `import.meta` in CommonJS, never load it.
 */
export function spawnEngineWorker(): Worker {
  return new Worker(new URL('./main.js', import.meta.url));
}
