/**
 * The engine's work that may take long on a big session or file: one plain
 * function per operation. In the browser they run inside the engine worker
 * (main.ts), so the page never blocks; in Node and in jest, where there is no
 * worker, EngineWorker runs them in-process, the same code either way.
 *
 * A handler takes one structured-cloneable payload and returns a value (or a
 * promise of one); a long one may take a second parameter, a function it
 * calls with progress reports, which reach the caller's `onProgress`. To hand back large binary data without a copy, return
 * `transferring(value, buffers)`. A handler may keep state in its own module
 * (for example parsed files by id): in the browser that state lives in the
 * worker and only what the handler returns crosses to the page, which is how
 * to keep a big snapshot off the main thread.
 *
 * Add an operation by adding one line here that names a function of your own
 * module; its parameter and result types become `call`'s types.
 */

import { rankLeaks } from '../engine/leaks/op';
import { closeSnapshotFile, describeMoment, diffMoments, fetchSnapshotFile, openSnapshotFile } from './files';
import { closeRanks, compareLoadedRanks, loadRanks } from './ranks';
import { Transferring } from './wire';

// In wire.ts, so that operation modules can use it without importing this table.
export { Transferring, transferring } from './wire';

/** Says where it ran, so tests and benchmarks can tell the worker is real. */
function where(): { worker: boolean } {
  const scope = globalThis as { WorkerGlobalScope?: unknown; importScripts?: unknown };
  return { worker: typeof scope.WorkerGlobalScope !== 'undefined' && typeof scope.importScripts === 'function' };
}

export const handlers = {
  where,
  rankLeaks,
  loadRanks,
  compareRanks: compareLoadedRanks,
  closeRanks,
  openSnapshotFile,
  fetchSnapshotFile,
  closeSnapshotFile,
  describeMoment,
  diffMoments
};

/** The operations. */
export type EngineOp = keyof typeof handlers;
/** What an operation takes. */
export type EnginePayload<K extends EngineOp> =
  Parameters<(typeof handlers)[K]> extends [infer P, ...unknown[]] ? P : void;
/** What an operation reports while it works (never, for most). */
export type EngineProgress<K extends EngineOp> =
  Parameters<(typeof handlers)[K]> extends [unknown, ((progress: infer R) => void)?, ...unknown[]] ? R : never;
/** What an operation gives back, once any Transferring wrapper is taken off. */
export type EngineResult<K extends EngineOp> =
  Awaited<ReturnType<(typeof handlers)[K]>> extends Transferring<infer T>
    ? T
    : Awaited<ReturnType<(typeof handlers)[K]>>;
