/**
 * The snapshots of one notebook, in execution order, keyed by cell id.
 * State and signals only: the session fills it, badges and the panel read it.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import {
  Block,
  BlockBirths,
  BlockRoles,
  cellCodeFolder,
  diffSnapshots,
  emptySnapshot,
  FrameTable,
  IHolderAnswer,
  IOomEvent,
  IOomReport,
  IPeakAnatomy,
  IRoleMove,
  IRoleSummary,
  IWireBefore,
  IWireDeviceStats,
  kernelPositions,
  oomReport,
  parseBlockRuns,
  parseRoleSummary,
  peakAnatomy,
  retentionByExecution,
  roleChange,
  roleMoves,
  RoleBytes,
  Snapshot,
  totalBytes
} from '../engine';
import { CellNoteKind, DEFAULT_HELPER_SETTINGS, HelperStatus, IRecordingAbout } from './protocol';

/** One snapshot the helper took, after a cell or at an out-of-memory error. */
export interface CellRecord {
  /** JupyterLab's cell id; null when the kernel did not say. */
  readonly cellId: string | null;
  readonly executionCount: number | null;
  readonly reason: 'cell' | 'oom';
  /** Kernel session the snapshot came from; rises at each restart or kernel change. */
  readonly kernelSession: number;
  readonly snapshot: Snapshot;
  readonly devices: readonly IWireDeviceStats[];
  /** Allocated bytes after the cell, over all devices. */
  readonly allocatedBytes: number;
  /** Change in allocated bytes since the previous cell of the same kernel session. */
  readonly netBytes: number;
  /** Change in reserved bytes since the previous cell of the same kernel session. */
  readonly reservedNetBytes: number;
  /** Peak allocated during the cell, over all devices (an upper bound when not peakExact). */
  readonly peakBytes: number;
  /**
   * False when the peak counters were not reset for the cell (the default,
   * so the user's max_memory_allocated() stays theirs) and the cell did not
   * raise the high-water mark: its peak lies at or below peakBytes.
   */
  readonly peakExact: boolean;
  /** The kernel's sequence number of the snapshot (within one kernel process). */
  readonly seq: number;
  readonly error: string | null;
  /**
   * The code this run ran, which its frames' line numbers count in (the
   * cell may have been edited since); null when the kernel did not say.
   * Records of the same code share one string.
   */
  readonly source: string | null;
  /** Name of the recorded session replayed in place of live snapshots, if any. */
  readonly replay: string | null;
  /** For an OOM snapshot, what the kernel said of the failed allocation. */
  readonly oom?: IOomEvent;
  /** What the memory alive after the cell is for (the kernel's role pass); null when the kernel sent none. */
  readonly roles?: IRoleSummary | null;
  /** Per role, the change since the kernel session's previous cell with roles (from nothing for its first). */
  readonly roleNetBytes?: RoleBytes | null;
}

/** What the store knows of the helper in the current kernel. */
export interface IHelperState {
  status: HelperStatus | 'starting' | 'not-python';
  message: string;
  /** The folder of the recording a replay kernel serves; null for a live kernel. */
  replay: string | null;
  /** What that recording says of itself (its notebook, its GPU), when the helper says. */
  recording?: IRecordingAbout | null;
  /** 'passive' when the helper leaves torch's peak counters alone. */
  peaks?: 'passive' | 'per-cell';
  /** Who records allocation history: this helper, the user's own code, or nobody. */
  history?: 'helper' | 'user' | 'off' | null;
  /** How often the helper was installed in this kernel process (1 unless its version changed). */
  installs?: number;
}

/** Why a cell has no snapshot (not in a replayed recording, its recorded runs all replayed, capture failed). */
export interface ICellNote {
  readonly note: CellNoteKind;
  readonly message: string;
}

/** What the session passes on for one snapshot message. */
export interface ISnapshotEntry {
  cellId: string | null;
  executionCount: number | null;
  reason: 'cell' | 'oom';
  seq: number;
  snapshot: Snapshot;
  devices: readonly IWireDeviceStats[];
  before?: readonly IWireBefore[];
  peak?: { bytes: number; exact: boolean };
  error: string | null;
  /** The code the run ran; null or absent when the kernel did not say. */
  source?: string | null;
  replay: string | null;
  oom?: IOomEvent;
  /** The message's `roles`, checked here: a malformed one is dropped, the snapshot kept. */
  roles?: unknown;
}

/** A notebook's snapshots. */
export class SnapshotStore implements IDisposable {
  constructor(options: SnapshotStore.IOptions = {}) {
    this.maxRecords = options.maxRecords ?? SnapshotStore.DEFAULT_MAX_RECORDS;
  }

  /** Frames shared by every snapshot of the notebook, across kernel restarts. */
  readonly frames = new FrameTable();

  /** Most records kept; the oldest are dropped beyond it. */
  maxRecords: number;

  /** Records in execution order. */
  get records(): readonly CellRecord[] {
    return this._records;
  }

  /** The records of cells' runs, in execution order: an OOM record is a moment inside a run, not a run. */
  get cellRuns(): readonly CellRecord[] {
    return this._records.filter(r => r.reason === 'cell');
  }

  /** How many old records were dropped to respect maxRecords. */
  get droppedCount(): number {
    return this._dropped;
  }

  /** The current kernel session number. */
  get kernelSession(): number {
    return this._kernelSession;
  }

  get helper(): IHelperState {
    return this._helper;
  }

  /** Emitted when records or the helper state change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The latest record after a cell ran (not an OOM one) for a cell id. */
  latestForCell(cellId: string): CellRecord | undefined {
    for (let i = this._records.length - 1; i >= 0; i--) {
      const r = this._records[i];
      if (r.cellId === cellId && r.reason === 'cell') {
        return r;
      }
    }
    return undefined;
  }

  /**
   * The record a cell's badge shows: its latest, unless the cell ran again in a
   * later kernel session that sent nothing about it (the helper was not back
   * yet, or took no snapshot): the earlier kernel's figures are not that run's.
   */
  shownForCell(cellId: string): CellRecord | undefined {
    const record = this.latestForCell(cellId);
    const ran = this._runs.get(cellId);
    return record && (ran === undefined || ran <= record.kernelSession) ? record : undefined;
  }

  /** A cell ran in the current kernel session: its run ended, and the kernel gave it an execution count. */
  cellRan(cellId: string): void {
    if (this._runs.get(cellId) === this._kernelSession) {
      return;
    }
    this._runs.set(cellId, this._kernelSession);
    this._changed.emit();
  }

  /** True when the cell's latest execution ran out of memory. */
  hadOom(record: CellRecord): boolean {
    return this._records.some(
      r =>
        r.reason === 'oom' &&
        r.cellId === record.cellId &&
        r.executionCount === record.executionCount &&
        r.kernelSession === record.kernelSession
    );
  }

  /**
   * Add a snapshot, unless this kernel process already gave it (a frontend
   * that attaches again is sent every kept snapshot). The net change is
   * against the kernel's own figures at the cell's start, so a missed
   * message or a reload never makes it wrong.
   */
  add(entry: ISnapshotEntry): CellRecord | undefined {
    if (entry.seq <= this._lastSeq) {
      return undefined;
    }
    this._lastSeq = entry.seq;
    const allocated = totalBytes(entry.snapshot, 'allocatedBytes');
    const reserved = totalBytes(entry.snapshot, 'reservedBytes');
    const before = entry.before;
    const roles = Private.roles(entry.roles);
    const previous = this._records.filter(r => r.kernelSession === this._kernelSession && r.reason === 'cell').pop();
    const record: CellRecord = {
      cellId: entry.cellId,
      executionCount: entry.executionCount,
      reason: entry.reason,
      seq: entry.seq,
      snapshot: entry.snapshot,
      devices: entry.devices,
      error: entry.error,
      source: this._sharedSource(entry.source ?? null),
      replay: entry.replay,
      kernelSession: this._kernelSession,
      allocatedBytes: allocated,
      netBytes: allocated - (before ? before.reduce((n, d) => n + d.allocated, 0) : 0),
      reservedNetBytes: reserved - (before ? before.reduce((n, d) => n + (d.reserved ?? 0), 0) : 0),
      peakBytes: entry.peak?.bytes ?? entry.devices.reduce((n, d) => n + (d.peak_allocated ?? 0), 0),
      peakExact: entry.peak?.exact ?? true,
      roles,
      roleNetBytes:
        roles && (!previous || previous.roles) ? roleChange(previous?.roles?.bytes ?? null, roles.bytes) : null,
      ...(entry.oom ? { oom: entry.oom } : {})
    };
    if (entry.cellId !== null) {
      this._notes.delete(entry.cellId);
    }
    const runs = (entry.roles as { blocks?: unknown } | null | undefined)?.blocks;
    if (runs !== undefined) {
      this._blockRuns.set(record, runs);
    }
    this._records.push(record);
    this._births = null;
    const excess = this._records.length - this.maxRecords;
    if (excess > 0) {
      this._records.splice(0, excess);
      this._dropped += excess;
    }
    this._changed.emit();
    return record;
  }

  /**
   * The source as a kept record already holds it, when one ran the same code
   * (a cell run again, Run All once more): one copy per distinct code, which
   * goes when the last record holding it is dropped.
   */
  private _sharedSource(source: string | null): string | null {
    if (source === null) {
      return null;
    }
    for (let i = this._records.length - 1; i >= 0; i--) {
      const kept = this._records[i].source;
      if (kept === source) {
        return kept;
      }
    }
    return source;
  }

  /**
   * The record a cell started from: the latest cell snapshot before it in
   * the same kernel session; null when the cell started from an empty device.
   */
  startOf(record: CellRecord): CellRecord | null {
    const at = this._records.indexOf(record);
    for (let i = at - 1; i >= 0; i--) {
      const r = this._records[i];
      if (r.kernelSession !== record.kernelSession) {
        return null;
      }
      if (r.reason === 'cell') {
        return r;
      }
    }
    return null;
  }

  /**
   * What was alive at the peak of a cell's execution, from the allocation
   * history its snapshot carries; null without history (traces off), and for
   * an execution interrupted by an OOM snapshot (its history is split). The
   * first cell of a kernel session starts from an empty device, after a
   * restart as in the first kernel (the CLI's session report reads it so).
   */
  peakOf(record: CellRecord): IPeakAnatomy | null {
    if (!this._peaks.has(record)) {
      const at = this._records.indexOf(record);
      const found = at > 0 ? this._records[at - 1] : null;
      const previous = found && found.kernelSession === record.kernelSession ? found : null;
      const linked = previous === null || previous.reason === 'cell';
      const start = previous ? previous.snapshot : this._empty();
      this._peaks.set(
        record,
        record.reason === 'cell' && at >= 0 && linked ? peakAnatomy(start, record.snapshot) : null
      );
    }
    return this._peaks.get(record)!;
  }

  /** The post-mortem of the cell execution's first out-of-memory error; null when it had none. */
  oomOf(record: CellRecord): IOomReport | null {
    if (!this._ooms.has(record)) {
      const atOom = this._oomRecordOf(record);
      const start = atOom ? (this.startOf(atOom)?.snapshot ?? this._empty()) : null;
      this._ooms.set(record, atOom && start ? oomReport(start, atOom.snapshot, atOom.oom) : null);
    }
    return this._ooms.get(record)!;
  }

  /**
   * The cell (its id) whose run allocated each block alive at a record's
   * peak (`peakOf`): the record's own for what its history allocated, else
   * the run that left the block alive at its start (see BlockBirths); null
   * where the records cannot tell. Copies of one cell share its code name:
   * this tells their runs apart. The records are compared on first use.
   */
  runsAtPeak(record: CellRecord): (b: Block) => string | null {
    const start = this.startOf(record);
    // A peak's blocks its history allocated have no segment (see IPeakAnatomy.alive).
    const runOf = this._runsAt(start);
    return b => (b.segment < 0 ? record.cellId : runOf(b));
  }

  /** As `runsAtPeak`, for the blocks alive at the out-of-memory error of a record's run (`oomOf`). */
  runsAtOom(record: CellRecord): (b: Block) => string | null {
    const oom = this.oomOf(record);
    const atOom = oom ? this._oomRecordOf(record) : undefined;
    const born = new Set(oom?.diff.born ?? []);
    const start = atOom ? this.startOf(atOom) : null;
    const runOf = this._runsAt(start);
    return b => (born.has(b) ? (atOom?.cellId ?? null) : runOf(b));
  }

  /**
   * For blocks alive in the snapshot of cell record `at`: the cell whose run
   * allocated each one; null when unknown. The records are compared on the
   * first block asked about (most sites need no run), and `at` is found
   * among them once, not once a block.
   */
  private _runsAt(at: CellRecord | null): (b: Block) => string | null {
    if (!at) {
      return () => null;
    }
    let found: { runs: readonly CellRecord[]; births: BlockBirths; position: number } | null = null;
    return b => {
      if (!found) {
        const { runs, births } = this._blockBirths();
        found = { runs, births, position: runs.indexOf(at) };
      }
      const run = found.births.runOf(b, found.position);
      // With older records dropped, what the first kept one holds may be theirs: it is not named by guess.
      return run === null || (run === 0 && this._dropped > 0) ? null : found.runs[run].cellId;
    };
  }

  /** Which run allocated each block, over the cell records: made when first asked after a record came. */
  private _blockBirths(): { runs: readonly CellRecord[]; births: BlockBirths } {
    if (!this._births) {
      const runs = this.cellRuns;
      const snapshots = runs.map(r => r.snapshot);
      const births = new BlockBirths(retentionByExecution(snapshots, kernelPositions(runs.map(r => r.kernelSession))));
      this._births = { runs, births };
    }
    return this._births;
  }

  /**
   * The folders of the cell code the notebook's kernels ran
   * (`/tmp/ipykernel_<pid>/`), as the frames of the snapshots they sent name
   * it: a frame of another folder (a file from another process, dropped on
   * the panel) is no cell of this notebook, however alike its source. The
   * same set grows as records come (each record's stacks are read once).
   */
  get cellCodeFolders(): ReadonlySet<string> {
    for (const r of this._records) {
      if (this._foldersRead.has(r)) {
        continue;
      }
      this._foldersRead.add(r);
      const { frames, blocks, traces } = r.snapshot;
      const read = (stack: number) => {
        if (this._stacksRead.has(stack)) {
          return;
        }
        this._stacksRead.add(stack);
        for (const id of frames.stack(stack)) {
          const folder = cellCodeFolder(frames.frame(id).filename);
          if (folder !== null) {
            this._cellCodeFolders.add(folder);
          }
        }
      };
      blocks.forEach(b => read(b.stack));
      traces.forEach(e => read(e.stack));
    }
    return this._cellCodeFolders;
  }

  /** The OOM record of a record's run: the record itself, or the OOM snapshot taken during it. */
  private _oomRecordOf(record: CellRecord): CellRecord | undefined {
    return record.reason === 'oom'
      ? record
      : this._records.find(
          r =>
            r.reason === 'oom' &&
            r.cellId === record.cellId &&
            r.executionCount === record.executionCount &&
            r.kernelSession === record.kernelSession
        );
  }

  private _empty(): Snapshot {
    this._emptySnapshot ??= emptySnapshot(this.frames);
    return this._emptySnapshot;
  }

  /**
   * Each allocated block's role in a record's snapshot, from its message's
   * per-block roles; null when the kernel sent none (an older helper, a
   * replayed cell recorded without a roles file) or they do not fit the
   * snapshot. Read on first use: only the diff and the segment map need it.
   */
  blockRolesOf(record: CellRecord): BlockRoles | null {
    if (!this._blockRoles.has(record)) {
      this._blockRoles.set(record, Private.blockRoles(this._blockRuns.get(record), record.snapshot));
      this._blockRuns.delete(record);
    }
    return this._blockRoles.get(record) ?? null;
  }

  /**
   * Blocks the record the cell started from (startOf) held already
   * that changed role during the cell (a list's tensors an autograd graph
   * then saved): its change by role counts them, the diff by role cannot;
   * null where either side has no per-block roles.
   */
  roleMovesOf(record: CellRecord): readonly IRoleMove[] | null {
    if (!this._roleMoves.has(record)) {
      const previous = this.startOf(record);
      const before = previous ? this.blockRolesOf(previous) : null;
      const after = this.blockRolesOf(record);
      this._roleMoves.set(
        record,
        previous && before && after
          ? roleMoves(diffSnapshots(previous.snapshot, record.snapshot), record.snapshot, before, after)
          : null
      );
    }
    return this._roleMoves.get(record)!;
  }

  /**
   * The kernel's answer about who held the blocks after a record, where it
   * was asked right after it (the leak finder asks after the latest cell);
   * null where it was not. The export writes it beside the record.
   */
  holdersOf(record: CellRecord): IHolderAnswer | null {
    return this._holders.get(record) ?? null;
  }

  /**
   * Keep the kernel's answer given when `record` was the latest. An answer
   * holds up to 20,000 blocks' holders, so only the newest
   * SnapshotStore.MAX_HOLDER_ANSWERS are kept.
   */
  keepHolders(record: CellRecord, answer: IHolderAnswer): void {
    this._holders.delete(record);
    this._holders.set(record, answer);
    for (const oldest of this._holders.keys()) {
      if (this._holders.size <= SnapshotStore.MAX_HOLDER_ANSWERS) {
        break;
      }
      this._holders.delete(oldest);
    }
  }

  /** The highest allocated peak the current kernel's allocator counters reported. */
  get sessionPeakBytes(): number {
    let peak = 0;
    for (const r of this._records) {
      if (r.kernelSession === this._kernelSession) {
        peak = Math.max(
          peak,
          r.devices.reduce((n, d) => n + (d.peak_allocated ?? 0), 0)
        );
      }
    }
    return peak;
  }

  /** Why a cell has no snapshot, when the kernel said. */
  noteForCell(cellId: string): ICellNote | undefined {
    return this._notes.get(cellId);
  }

  /** The kernel said a cell has no snapshot. */
  addNote(cellId: string, note: ICellNote): void {
    this._notes.set(cellId, note);
    this._changed.emit();
  }

  /**
   * The kernel process the helper runs in: a new one (a restart made
   * elsewhere, a reload after one) starts a new kernel session here.
   */
  setRun(run: string): void {
    if (this._run !== null && this._run !== run) {
      this._startKernelSession();
    }
    this._run = run;
  }

  /** Start a new kernel session: earlier records stay, marked as the previous kernel's. */
  newKernelSession(): void {
    this._startKernelSession();
    this._run = null;
    this.setHelper({ status: 'starting', message: '', replay: null });
  }

  private _startKernelSession(): void {
    this._kernelSession++;
    this._lastSeq = 0;
    this._notes.clear();
  }

  setHelper(state: IHelperState): void {
    this._helper = state;
    this._changed.emit();
  }

  /** Whether the store was disposed. */
  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._holders.clear();
    Signal.clearData(this);
  }

  private _records: CellRecord[] = [];
  private _dropped = 0;
  private _kernelSession = 0;
  private _lastSeq = 0;
  private _run: string | null = null;
  private readonly _notes = new Map<string, ICellNote>();
  // The kernel session each cell last ran in; one entry per cell of the notebook.
  private readonly _runs = new Map<string, number>();
  // Derived per record on first use; records never change.
  private readonly _peaks = new WeakMap<CellRecord, IPeakAnatomy | null>();
  private readonly _ooms = new WeakMap<CellRecord, IOomReport | null>();
  private readonly _blockRuns = new WeakMap<CellRecord, unknown>();
  private readonly _blockRoles = new WeakMap<CellRecord, BlockRoles | null>();
  private readonly _roleMoves = new WeakMap<CellRecord, readonly IRoleMove[] | null>();
  // Insertion order is age: the oldest answer goes first.
  private readonly _holders = new Map<CellRecord, IHolderAnswer>();
  private _emptySnapshot: Snapshot | null = null;
  // The cell code folders the records' frames name (see cellCodeFolders), and what was read for them.
  private readonly _cellCodeFolders = new Set<string>();
  private readonly _foldersRead = new WeakSet<CellRecord>();
  private readonly _stacksRead = new Set<number>();
  // Which run allocated each block, over the cell records (see _runsAt); recomputed after a record is added.
  private _births: { runs: readonly CellRecord[]; births: BlockBirths } | null = null;
  private _helper: IHelperState = { status: 'starting', message: '', replay: null };
  private _changed = new Signal<this, void>(this);
  private _isDisposed = false;
}

/** A namespace for SnapshotStore statics. */
export namespace SnapshotStore {
  /** Snapshots kept by default per notebook. */
  export const DEFAULT_MAX_RECORDS = DEFAULT_HELPER_SETTINGS.snapshots_kept;

  /** Kernel answers about holders kept (each goes to the leak finder's worker with every ranking). */
  export const MAX_HOLDER_ANSWERS = 8;

  export interface IOptions {
    maxRecords?: number;
  }
}

namespace Private {
  /** A snapshot's per-block roles from its message's runs; null when absent or not the snapshot's. */
  export function blockRoles(runs: unknown, snapshot: Snapshot): BlockRoles | null {
    if (runs === undefined || runs === null) {
      return null;
    }
    try {
      return parseBlockRuns(runs, snapshot, 'roles.blocks');
    } catch {
      return null;
    }
  }

  /** The roles of a snapshot message, or null when it has none or they cannot be read. */
  export function roles(raw: unknown): IRoleSummary | null {
    if (raw === undefined || raw === null) {
      return null;
    }
    try {
      return parseRoleSummary(raw, 'roles');
    } catch {
      return null;
    }
  }
}
