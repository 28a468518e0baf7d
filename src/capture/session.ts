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
import { IWireSnapshot, WireDecoder } from '../engine';
import { COMM_TARGET, HelperMessage, IHelperSettings, injectionCode, PROTOCOL_VERSION } from './protocol';
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

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._kernel?.removeCommTarget(COMM_TARGET, this._onCommOpen);
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
  private _pendingRestart = false;
  private _isDisposed = false;
}

/** A namespace for CaptureSession statics. */
export namespace CaptureSession {
  export interface IOptions {
    sessionContext: ISessionContext;
    store: SnapshotStore;
    /** The helper settings to inject with (read at each injection). */
    settings: () => IHelperSettings;
  }
}
