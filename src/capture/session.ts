/**
 * The only code that talks to the kernel: one per notebook (every view of a
 * notebook shares it). It injects the helper into Python kernels once per
 * kernel process (a kernel that already runs the same helper only takes the
 * settings), opens its own comm to the helper, validates every message, and
 * turns snapshots into store records. When a message does not follow what it
 * has, it asks the helper to send everything again. Non-Python kernels are
 * left alone.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';
import { IHolderAnswer, IWireSnapshot, parseHolderAnswer, SnapshotError, WireDecoder } from '../engine';
import {
  BlockQuery,
  COMM_TARGET,
  HelperMessage,
  IHelperSettings,
  IHoldersMessage,
  injectionCode,
  PROTOCOL_VERSION
} from './protocol';
import { KernelComms } from './comms';
import { SnapshotStore } from './store';
import { MessageError, validateMessage } from './validate';

/** Connects one notebook's kernel to its snapshot store. */
export class CaptureSession implements IDisposable {
  constructor(options: CaptureSession.IOptions) {
    this._context = options.sessionContext;
    this._store = options.store;
    this._settings = options.settings;
    this._comms = options.comms ?? new KernelComms();
    this._context.kernelChanged.connect(this._onKernelChanged, this);
    this._context.statusChanged.connect(this._onStatusChanged, this);
    void this._context.ready.then(() => this._connect());
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** How many times this session sent the helper's source (one per kernel process, for tests). */
  get injections(): number {
    return this._injections;
  }

  /** Pass changed settings to the helper; the helper, its log and its frontends stay. */
  async reinstall(): Promise<void> {
    const kernel = this._kernel;
    if (this._isDisposed || !kernel || !this._comm) {
      return;
    }
    await kernel.requestExecute(this._execute(), true).done;
  }

  /**
   * A cell of this notebook is about to go to the kernel. The helper goes in
   * once the kernel has answered its info request (on opening, after a kernel
   * change) or is idle (after a restart); a cell run before that (Run All as
   * the notebook opens, Shift+Enter right after a restart) waits in the
   * connection's queue ahead of it and would run uncaptured. Sent now, the
   * helper goes first, and the comm right behind it: opened later, its
   * request would wait in the kernel's queue behind every cell Run All
   * queued, and no snapshot would come before the last cell ended.
   */
  cellScheduled(): void {
    const kernel = this._context.session?.kernel ?? null;
    if (
      this._isDisposed ||
      !kernel ||
      this._injectedInto === kernel.id ||
      !(this._pendingRestart || this._attaching === kernel) ||
      !this._speaksPython(kernel)
    ) {
      return;
    }
    // Cancelled by another restart, or the kernel died: the restart's or the new kernel's connection sends it.
    this._inject(kernel).catch(() => undefined);
    if (this._injectedInto === kernel.id) {
      // Sent (it is marked at once): the comm goes right behind it. Where no connection of this page may
      // open comms, the attach that follows says so.
      this._openComm(kernel);
    }
  }

  /**
   * Ask the kernel who holds these blocks. Rejects when the helper has no
   * comm open, when the session is disposed, or when no answer comes within
   * `timeoutMs` (the kernel answers between cells, so a long cell delays it).
   */
  requestHolders(
    blocks: readonly BlockQuery[],
    options: { budgetMs?: number; timeoutMs?: number } = {}
  ): Promise<IHolderAnswer> {
    const comm = this._comm;
    if (this._isDisposed || !comm || comm.isDisposed) {
      return Promise.reject(new Error('the kernel helper is not connected'));
    }
    const id = ++this._requestId;
    const timeoutMs = options.timeoutMs ?? CaptureSession.HOLDERS_TIMEOUT_MS;
    return new Promise<IHolderAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(id);
        reject(
          new Error(`the kernel did not answer within ${Math.round(timeoutMs / 1000)} s (is a cell still running?)`)
        );
      }, timeoutMs);
      this._pending.set(id, {
        answer: message => {
          clearTimeout(timer);
          try {
            resolve(parseHolderAnswer(message));
          } catch (reason) {
            reject(reason);
          }
        },
        cancel: reason => {
          clearTimeout(timer);
          reject(new Error(reason));
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
    this._closeComm();
    this._cancelPending('the notebook was closed');
    Signal.clearData(this);
  }

  private _onKernelChanged(): void {
    const kernel = this._context.session?.kernel ?? null;
    if (kernel && this._commOf?.kernel === kernel && this._comm && !this._comm.isDisposed) {
      // JupyterLab says so after a restart too, of the same connection: the comm opened on it since the
      // restart (with the helper, ahead of the cells a Restart & Run All queued) stays, and so does its attach.
      return;
    }
    // The same kernel after a reconnection is the same session of it; the helper's
    // run id tells the store when the process changed under us.
    if (this._context.session?.kernel?.id !== this._injectedInto) {
      this._store.newKernelSession();
    }
    this._generation++;
    void this._connect();
  }

  private _onStatusChanged(_: ISessionContext, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this._processGone();
      this._pendingRestart = true;
    } else if (status === 'idle' && this._pendingRestart) {
      this._pendingRestart = false;
      void this._connect();
    }
  }

  /**
   * A message from another process of the kernel the helper spoke in, with no
   * restart seen here: another page or a REST call restarted it. This page
   * gets no "restarting" then, only the new process's messages (its
   * "starting" status first, unless it was sent before the server listened
   * again). The helper goes in at once. Only the kernel's own statuses count:
   * the server writes some messages (a rate limit's warning, "restarting",
   * "dead") under a session of its own.
   */
  private _onIopub(kernel: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    const spoke = this._process;
    if (
      spoke &&
      !this._pendingRestart &&
      KernelMessage.isStatusMsg(msg) &&
      !['restarting', 'dead'].includes(msg.content.execution_state) &&
      kernel === this._context.session?.kernel &&
      kernel.id === spoke.kernel &&
      msg.header.session !== spoke.session
    ) {
      this._processGone();
      void this._connect();
    }
  }

  /** The kernel process went away (a restart): its snapshots are the previous kernel's, its helper is gone. */
  private _processGone(): void {
    this._store.newKernelSession();
    this._generation++;
    this._injectedInto = null; // a new kernel process: it needs the helper
    this._process = null;
    // The kernel process is going away with its end of the comm: forget ours, send nothing now.
    this._comm = null;
    this._decoder = null;
    this._cancelPending('the kernel restarted');
  }

  /** Inject and attach once per kernel connection and kernel process. */
  private _connect(): Promise<void> {
    const kernel = this._context.session?.kernel ?? null;
    if (this._isDisposed || !kernel) {
      return Promise.resolve();
    }
    const key = this._connecting;
    if (key && key.kernel === kernel && key.generation === this._generation) {
      return key.done;
    }
    const generation = this._generation;
    const done = this._attach(kernel, generation).catch(reason => {
      if (!this._isStale(kernel, generation)) {
        this._store.setHelper({ status: 'error', message: (reason as Error).message, replay: null });
      }
    });
    this._connecting = { kernel, generation, done };
    return done;
  }

  private _isStale(kernel: Kernel.IKernelConnection, generation: number): boolean {
    return this._isDisposed || kernel !== (this._context.session?.kernel ?? null) || generation !== this._generation;
  }

  private async _attach(kernel: Kernel.IKernelConnection, generation: number): Promise<void> {
    if (!this._hasComm(kernel, generation)) {
      this._closeComm();
    }
    this._kernel = kernel;
    this._attaching = kernel; // until its info comes, a cell run sends the helper (cellScheduled)
    let info: KernelMessage.IInfoReply;
    try {
      info = await kernel.info;
    } finally {
      if (this._attaching === kernel) {
        this._attaching = null;
      }
    }
    if (this._isStale(kernel, generation)) {
      return;
    }
    if (info.language_info.name !== 'python') {
      this._store.setHelper({ status: 'not-python', message: info.language_info.name, replay: null });
      return;
    }
    this._pythonKernel = kernel.id; // a restart keeps the id and the language
    // A new connection to the kernel process this session already injected (JupyterLab
    // reconnects after a restart, or a cell run at once after it sent the helper) needs only a new comm.
    const injected = this._injectedInto !== kernel.id ? this._inject(kernel) : null;
    injected?.catch(() => undefined); // awaited below, after the comm: its failure is handled there
    // The comm goes right behind the helper's source, before the reply: opened after it, its request would
    // wait in the kernel's queue behind every cell Run All sent meanwhile, and no snapshot would come before
    // the last cell ended. Opened already where a cell was scheduled before the attach (cellScheduled).
    const opened = this._hasComm(kernel, generation) || this._openComm(kernel);
    if (injected && (!(await injected) || this._isStale(kernel, generation))) {
      return;
    }
    if (!opened) {
      this._store.setHelper({
        status: 'error',
        message: 'another page holds the comms of this kernel: open the notebook there to see its GPU memory',
        replay: null
      });
    }
  }

  /** Whether this session's comm is open on this kernel connection for this generation of it. */
  private _hasComm(kernel: Kernel.IKernelConnection, generation: number): boolean {
    const comm = this._comm;
    return !!comm && !comm.isDisposed && this._commOf?.kernel === kernel && this._commOf.generation === generation;
  }

  /**
   * Open this session's comm to the helper; false when no connection of this
   * page may open comms on the kernel. The request joins the kernel's queue
   * behind what was sent before it, the helper's source included.
   */
  private _openComm(kernel: Kernel.IKernelConnection): boolean {
    this._comms.add(kernel);
    kernel.iopubMessage.connect(this._onIopub, this); // once per connection: a second connect is ignored
    const carrier = this._comms.connectionFor(kernel);
    if (!carrier) {
      return false;
    }
    this._kernel = kernel;
    const comm = carrier.createComm(COMM_TARGET);
    this._comm = comm;
    this._commOf = { kernel, generation: this._generation };
    this._decoder = new WireDecoder(this._store.frames);
    let heard = false;
    comm.onMsg = msg => {
      heard = true;
      if (comm === this._comm) {
        this._process = { kernel: kernel.id, session: msg.header.session };
      }
      this._handle(comm, msg.content.data);
    };
    comm.onClose = () => {
      if (this._comm !== comm) {
        return;
      }
      this._comm = null;
      this._cancelPending('the kernel helper closed its connection');
      if (!heard && this._injectedInto === kernel.id && this._reconnects < CaptureSession.MAX_RESENDS) {
        // No helper answered in this kernel (restarted from elsewhere, say): inject and attach again. (Where
        // the helper's source failed, the status says why: sending it again would fail again.)
        this._reconnects++;
        this._injectedInto = null;
        this._generation++;
        void this._connect();
      }
    };
    comm.open({ v: PROTOCOL_VERSION, type: 'attach' });
    return true;
  }

  /** Send the helper's source to the kernel process; false when it failed there (the status says why). */
  private async _inject(kernel: Kernel.IKernelConnection): Promise<boolean> {
    const future = kernel.requestExecute(this._execute(), true); // throws at once where nothing can be sent
    // Marked before the reply: a reconnection while it runs must not send it twice.
    this._injectedInto = kernel.id;
    this._injections++;
    const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
    if (reply.content.status === 'error') {
      this._injectedInto = null;
      // Sent early (cellScheduled), the generation has moved on by the reply: the kernel is what counts.
      if (!this._isDisposed && kernel === (this._context.session?.kernel ?? null)) {
        this._store.setHelper({
          status: 'error',
          message: `${reply.content.ename}: ${reply.content.evalue}`,
          replay: null
        });
      }
      return false;
    }
    return true;
  }

  /**
   * Whether the kernel is an IPython kernel, before its info comes: known
   * from an earlier attach (a restart keeps the id), or from an ipykernel's
   * spec. A spec's language alone is not enough: a wrapper kernel (PySpark's)
   * says Python and sends the code to a cluster.
   */
  private _speaksPython(kernel: Kernel.IKernelConnection): boolean {
    if (kernel.id === this._pythonKernel) {
      return true;
    }
    const spec = this._context.specsManager.specs?.kernelspecs[kernel.name];
    return (
      !!spec &&
      spec.language.toLowerCase() === 'python' &&
      (spec.argv.some(arg => arg.includes('ipykernel')) || spec.metadata?.debugger === true)
    );
  }

  private _execute(): KernelMessage.IExecuteRequestMsg['content'] {
    return {
      code: injectionCode(this._settings()),
      silent: true,
      store_history: false,
      allow_stdin: false,
      stop_on_error: false
    };
  }

  private _handle(comm: Kernel.IComm, data: unknown): void {
    if (this._isDisposed || comm !== this._comm) {
      return;
    }
    let message: HelperMessage;
    try {
      message = validateMessage(data);
    } catch (reason) {
      this._refuse(reason as Error, (data as { type?: unknown } | null)?.type === 'snapshot');
      return;
    }
    try {
      if (message.type === 'status') {
        if (message.run) {
          this._store.setRun(message.run);
        }
        this._store.setHelper({
          status: message.status,
          message: message.message,
          replay: message.replay ?? null,
          recording: message.recording ?? null,
          peaks: message.peaks,
          history: message.history,
          installs: message.installs
        });
      } else if (message.type === 'cell-note') {
        if (message.cell_id !== null) {
          this._store.addNote(message.cell_id, { note: message.note, message: message.message });
        }
      } else if (message.type === 'snapshot') {
        this._addSnapshot(message);
      } else if (message.type === 'holders') {
        const id = message.id;
        const pending = id === null ? undefined : this._pending.get(id);
        this._pending.delete(id ?? -1);
        pending?.answer(message as IHoldersMessage);
      }
    } catch (reason) {
      this._refuse(reason as Error, reason instanceof SnapshotError);
    }
  }

  /** Say why a message was refused; for a snapshot, ask the helper for everything again. */
  private _refuse(reason: Error, resend: boolean): void {
    const known = reason instanceof MessageError || reason instanceof SnapshotError;
    this._store.setHelper({
      ...this._store.helper,
      status: 'error',
      message: known ? reason.message : `the kernel helper's message could not be read: ${reason.message}`
    });
    const comm = this._comm;
    if (resend && comm && !comm.isDisposed && this._resends < CaptureSession.MAX_RESENDS) {
      this._resends++;
      this._decoder = new WireDecoder(this._store.frames);
      comm.send({ type: 'resend' });
    }
  }

  private _addSnapshot(message: IWireSnapshot): void {
    if (!this._decoder) {
      return;
    }
    const snapshot = this._decoder.decode(message);
    this._store.add({
      cellId: message.cell_id,
      executionCount: message.execution_count,
      reason: message.reason,
      seq: message.seq,
      snapshot,
      devices: message.devices,
      before: message.before,
      peak: message.peak,
      error: message.error,
      source: message.source ?? null,
      replay: message.replay ?? null,
      oom: message.oom,
      roles: message.roles
    });
    // A whole message: the wire works, so a later break gets its full budget of resends and reconnects.
    this._resends = 0;
    this._reconnects = 0;
    if (this._store.helper.status === 'error') {
      // A whole message after a refused one: the wire healed.
      this._store.setHelper({ ...this._store.helper, status: 'ready', message: '' });
    }
  }

  private _closeComm(): void {
    const comm = this._comm;
    this._comm = null;
    this._commOf = null;
    this._decoder = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone; nothing to tell it
      }
    }
  }

  private _cancelPending(reason: string): void {
    for (const pending of this._pending.values()) {
      pending.cancel(reason);
    }
    this._pending.clear();
  }

  private readonly _context: ISessionContext;
  private readonly _store: SnapshotStore;
  private readonly _settings: () => IHelperSettings;
  private readonly _comms: KernelComms;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _decoder: WireDecoder | null = null;
  private _comm: Kernel.IComm | null = null;
  // The kernel connection and generation the comm was opened for.
  private _commOf: { kernel: Kernel.IKernelConnection; generation: number } | null = null;
  private _connecting: { kernel: Kernel.IKernelConnection; generation: number; done: Promise<void> } | null = null;
  private _generation = 0;
  private _injections = 0;
  private _injectedInto: string | null = null;
  // The kernel process whose helper spoke on the current comm: its kernel's id and the session its messages carry.
  private _process: { kernel: string; session: string } | null = null;
  // The kernel known to speak Python (by id, which a restart keeps): a cell run right after a restart may inject.
  private _pythonKernel: string | null = null;
  // The kernel whose info an attach awaits: the helper is not sent yet.
  private _attaching: Kernel.IKernelConnection | null = null;
  private _reconnects = 0;
  private _resends = 0;
  private _requestId = 0;
  private readonly _pending = new Map<
    number,
    { answer: (m: IHoldersMessage) => void; cancel: (reason: string) => void }
  >();
  private _pendingRestart = false;
  private _isDisposed = false;
}

/** A namespace for CaptureSession statics. */
export namespace CaptureSession {
  /** How long to wait for a holders answer. */
  export const HOLDERS_TIMEOUT_MS = 30000;

  /** How often one connection asks the helper to send everything again before it gives up. */
  export const MAX_RESENDS = 5;

  export interface IOptions {
    sessionContext: ISessionContext;
    store: SnapshotStore;
    /** The helper settings to inject with (read at each injection). */
    settings: () => IHelperSettings;
    /** The page's comm-capable kernel connections, shared by every notebook's session. */
    comms?: KernelComms;
  }
}
