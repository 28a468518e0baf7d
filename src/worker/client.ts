/**
 * The page's handle on the engine worker. `call` runs an operation of
 * handlers.ts and resolves with its result; with no worker (Node, jest, a
 * browser that refused to start it) the same handler runs in-process, so
 * every caller has one code path and the results are the same.
 */
import { IDisposable } from '@lumino/disposable';
import { EngineOp, EnginePayload, EngineProgress, EngineResult, handlers, Transferring } from './handlers';
import { errorOf, IWorkerRequest, WorkerMessage } from './wire';

interface IPending {
  resolve(value: unknown): void;
  reject(reason: Error): void;
  progress(value: unknown): void;
}

export class EngineWorker implements IDisposable {
  /**
   * @param spawn starts the browser worker (see browser.ts); without it, or
   *   when it throws, operations run in-process.
   */
  constructor(spawn?: () => Worker) {
    this._spawn = spawn ?? null;
  }

  /**
   * Whether operations run in a worker (false: in-process). The worker starts
   * at the first call, so a page that never needs the engine pays nothing.
   */
  get inWorker(): boolean {
    return this._spawn !== null || this._worker !== null;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /**
   * Run `op` on `payload`; `transfer` lists buffers in the payload to move
   * rather than copy (the caller must not use them afterwards); `onProgress`
   * gets the operation's progress reports while it runs.
   */
  call<K extends EngineOp>(
    op: K,
    payload: EnginePayload<K>,
    transfer: readonly ArrayBuffer[] = [],
    onProgress: (progress: EngineProgress<K>) => void = () => undefined
  ): Promise<EngineResult<K>> {
    if (this._isDisposed) {
      return Promise.reject(new Error('the engine worker was disposed'));
    }
    const worker = this._started();
    if (!worker) {
      return this._inProcess(op, payload, onProgress);
    }
    const id = ++this._lastId;
    const request: IWorkerRequest = { id, op, payload };
    return new Promise<EngineResult<K>>((resolve, reject) => {
      this._pending.set(id, {
        resolve: resolve as (value: unknown) => void,
        reject,
        progress: onProgress as (value: unknown) => void
      });
      worker.postMessage(request, [...transfer]);
    });
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._worker?.terminate();
    this._worker = null;
    this._fail('the engine worker was disposed');
  }

  /** The worker, started on first use; null when there is none. */
  private _started(): Worker | null {
    const spawn = this._spawn;
    if (spawn) {
      this._spawn = null;
      try {
        const worker = spawn();
        worker.onmessage = event => this._settle(event.data as WorkerMessage);
        // Errors inside handlers come back as replies; this one means the
        // worker itself died or never loaded: fail what waits, then work on
        // the page rather than leave the user with nothing.
        worker.onerror = event => {
          event.preventDefault?.();
          console.warn('cuda-memdiff: the engine worker failed, working on the page from now on', event.message);
          worker.terminate();
          this._worker = null;
          this._fail(`the engine worker failed: ${event.message || 'it did not start'}`);
        };
        this._worker = worker;
      } catch (reason) {
        console.warn('cuda-memdiff: engine worker unavailable, working on the page', reason);
      }
    }
    return this._worker;
  }

  private async _inProcess<K extends EngineOp>(
    op: K,
    payload: EnginePayload<K>,
    onProgress: (progress: EngineProgress<K>) => void
  ): Promise<EngineResult<K>> {
    // A macrotask first, like a worker round trip, so callers that render a
    // "working" state get to paint it before the work starts.
    await new Promise(resolve => setTimeout(resolve, 0));
    const handler = handlers[op] as (
      payload: EnginePayload<K>,
      report: (progress: EngineProgress<K>) => void
    ) => unknown;
    const result = await handler(payload, onProgress);
    return (result instanceof Transferring ? result.value : result) as EngineResult<K>;
  }

  private _settle(reply: WorkerMessage): void {
    const pending = this._pending.get(reply.id);
    if (!pending) {
      return;
    }
    if ('progress' in reply) {
      pending.progress(reply.progress);
      return;
    }
    this._pending.delete(reply.id);
    if (reply.ok) {
      pending.resolve(reply.value);
    } else {
      pending.reject(errorOf(reply));
    }
  }

  /** Reject every pending call; used when the worker dies or is disposed. */
  private _fail(message: string): void {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) {
      p.reject(new Error(message));
    }
  }

  private _spawn: (() => Worker) | null;
  private _worker: Worker | null = null;
  private _pending = new Map<number, IPending>();
  private _lastId = 0;
  private _isDisposed = false;
}
