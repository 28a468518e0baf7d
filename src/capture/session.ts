/**
 * The only code that talks to the kernel: one per notebook session context.
 * It registers the comm target, injects the helper into Python kernels (again
 * after each restart or kernel change), and turns helper messages into store
 * records. Non-Python kernels are left alone.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';
import { IHolderAnswer, IWireSnapshot, parseHolderAnswer, WireDecoder } from '../engine';
import { BlockQuery, COMM_TARGET, HelperMessage, IHelperSettings, IHoldersMessage, injectionCode, PROTOCOL_VERSION } from './protocol';
import { SnapshotStore } from './store';

/** Connects one notebook's kernel to its snapshot store. */
export class CaptureSession implements IDisposable {
  constructor(options: CaptureSession.IOptions) {
    this._context = options.sessionContext;
    this._store = options.store;
    this._settings = options.settings;
    this._context.kernelChanged.connect(this._onKernelChanged, this);
    this._context.statusChanged.connect(this._onStatusChanged, this);
    void this._context.ready.then(() => this._start());
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Install the helper again, e.g. after the settings changed. */
  async reinstall(): Promise<void> {
    await this._start();
  }

  /**
   * Ask the kernel who holds these blocks. Rejects when the helper has no
   * comm open yet, or when no answer comes within `timeoutMs` (the kernel
   * answers between cells, so a long cell delays it).
   */
  requestHolders(blocks: readonly BlockQuery[], options: { budgetMs?: number; timeoutMs?: number } = {}): Promise<IHolderAnswer> {
    const comm = this._comm;
    if (this._isDisposed || !comm || comm.isDisposed) {
      return Promise.reject(new Error('the kernel helper is not connected'));
    }
    const id = ++this._requestId;
    const timeoutMs = options.timeoutMs ?? CaptureSession.HOLDERS_TIMEOUT_MS;
    return new Promise<IHolderAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(id);
        reject(new Error(`the kernel did not answer within ${Math.round(timeoutMs / 1000)} s (is a cell still running?)`));
      }, timeoutMs);
      this._pending.set(id, message => {
        clearTimeout(timer);
        try {
          resolve(parseHolderAnswer(message));
        } catch (reason) {
          reject(reason);
        }
      });
      comm.send({ type: 'holders-request', id, blocks: blocks.map(b => [...b]), budget_ms: options.budgetMs ?? 2000 });
    });
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._kernel?.removeCommTarget(COMM_TARGET, this._onCommOpen);
    this._pending.clear();
    Signal.clearData(this);
  }

  private _onKernelChanged(): void {
    this._store.newKernelSession();
    void this._start();
  }

  private _onStatusChanged(_: ISessionContext, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this._store.newKernelSession();
      this._pendingRestart = true;
    } else if (status === 'idle' && this._pendingRestart) {
      this._pendingRestart = false;
      void this._start();
    }
  }

  private async _start(): Promise<void> {
    const kernel = this._context.session?.kernel ?? null;
    if (this._isDisposed || !kernel) {
      return;
    }
    if (kernel !== this._kernel) {
      this._kernel?.removeCommTarget(COMM_TARGET, this._onCommOpen);
      this._kernel = kernel;
      kernel.registerCommTarget(COMM_TARGET, this._onCommOpen);
    }
    const info = await kernel.info;
    if (this._isDisposed || kernel !== this._kernel) {
      return;
    }
    if (info.language_info.name !== 'python') {
      this._store.setHelper({ status: 'not-python', message: info.language_info.name, replay: null });
      return;
    }
    this._decoder = new WireDecoder(this._store.frames);
    const future = kernel.requestExecute(
      { code: injectionCode(this._settings()), silent: true, store_history: false, allow_stdin: false, stop_on_error: false },
      true
    );
    const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
    if (this._isDisposed) {
      return;
    }
    if (reply.content.status === 'error') {
      this._store.setHelper({
        status: 'error',
        message: `${reply.content.ename}: ${reply.content.evalue}`,
        replay: null
      });
    }
  }

  private _onCommOpen = (comm: Kernel.IComm): void => {
    this._comm = comm;
    comm.onMsg = msg => this._handle(msg.content.data as unknown as HelperMessage);
  };

  private _handle(message: HelperMessage): void {
    if (this._isDisposed) {
      return;
    }
    if (message.v !== PROTOCOL_VERSION) {
      this._store.setHelper({
        status: 'error',
        message: `the kernel helper speaks protocol ${message.v}, this extension ${PROTOCOL_VERSION}`,
        replay: null
      });
      return;
    }
    try {
      if (message.type === 'status') {
        if (!('cell_id' in message)) {
          this._store.setHelper({ status: message.status, message: message.message, replay: message.replay ?? null });
        }
      } else if (message.type === 'snapshot') {
        this._addSnapshot(message);
      } else if (message.type === 'holders') {
        const id = (message as IHoldersMessage).id;
        const answer = id === null ? undefined : this._pending.get(id);
        this._pending.delete(id ?? -1);
        answer?.(message as IHoldersMessage);
      }
    } catch (reason) {
      this._store.setHelper({ status: 'error', message: (reason as Error).message, replay: null });
    }
  }

  private _addSnapshot(message: IWireSnapshot): void {
    if (!this._decoder) {
      return;
    }
    this._store.add({
      cellId: message.cell_id,
      executionCount: message.execution_count,
      reason: message.reason,
      snapshot: this._decoder.decode(message),
      devices: message.devices,
      error: message.error,
      replay: message.replay ?? null
    });
  }

  private readonly _context: ISessionContext;
  private readonly _store: SnapshotStore;
  private readonly _settings: () => IHelperSettings;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _decoder: WireDecoder | null = null;
  private _comm: Kernel.IComm | null = null;
  private _requestId = 0;
  private readonly _pending = new Map<number, (message: IHoldersMessage) => void>();
  private _pendingRestart = false;
  private _isDisposed = false;
}

/** A namespace for CaptureSession statics. */
export namespace CaptureSession {
  /** How long to wait for a holders answer. */
  export const HOLDERS_TIMEOUT_MS = 30000;

  export interface IOptions {
    sessionContext: ISessionContext;
    store: SnapshotStore;
    /** The helper settings to inject with (read at each injection). */
    settings: () => IHelperSettings;
  }
}
