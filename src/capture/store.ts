/**
 * The snapshots of one notebook, in execution order, keyed by cell id.
 * State and signals only: the session fills it, badges and the panel read it.
 */
import { ISignal, Signal } from '@lumino/signaling';
import { FrameTable, IWireDeviceStats, Snapshot, totalBytes } from '../engine';
import { HelperStatus } from './protocol';

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
  /** Peak allocated during the cell, over all devices. */
  readonly peakBytes: number;
  readonly error: string | null;
  /** Name of the recorded session replayed in place of live snapshots, if any. */
  readonly replay: string | null;
}

/** What the store knows of the helper in the current kernel. */
export interface IHelperState {
  status: HelperStatus | 'starting' | 'not-python';
  message: string;
  replay: string | null;
}

/** A notebook's snapshots. */
export class SnapshotStore {
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

  /** Add a snapshot; net change is against the previous cell snapshot of this kernel session. */
  add(entry: Omit<CellRecord, 'kernelSession' | 'allocatedBytes' | 'netBytes' | 'reservedNetBytes' | 'peakBytes'>): CellRecord {
    const allocated = totalBytes(entry.snapshot, 'allocatedBytes');
    const reserved = totalBytes(entry.snapshot, 'reservedBytes');
    const previous = entry.reason === 'cell' ? this._lastCell : undefined;
    const record: CellRecord = {
      ...entry,
      kernelSession: this._kernelSession,
      allocatedBytes: allocated,
      netBytes: allocated - (previous?.allocated ?? 0),
      reservedNetBytes: reserved - (previous?.reserved ?? 0),
      peakBytes: entry.devices.reduce((n, d) => n + (d.peak_allocated ?? 0), 0)
    };
    if (entry.reason === 'cell') {
      this._lastCell = { allocated, reserved };
    }
    this._records.push(record);
    const excess = this._records.length - this.maxRecords;
    if (excess > 0) {
      this._records.splice(0, excess);
      this._dropped += excess;
    }
    this._changed.emit();
    return record;
  }

  /** Start a new kernel session: earlier records stay, marked as the previous kernel's. */
  newKernelSession(): void {
    this._kernelSession++;
    this._lastCell = undefined;
    this.setHelper({ status: 'starting', message: '', replay: null });
  }

  setHelper(state: IHelperState): void {
    this._helper = state;
    this._changed.emit();
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _records: CellRecord[] = [];
  private _dropped = 0;
  private _kernelSession = 0;
  private _lastCell: { allocated: number; reserved: number } | undefined;
  private _helper: IHelperState = { status: 'starting', message: '', replay: null };
  private _changed = new Signal<this, void>(this);
}

/** A namespace for SnapshotStore statics. */
export namespace SnapshotStore {
  /** Snapshots kept by default per notebook. */
  export const DEFAULT_MAX_RECORDS = 200;

  export interface IOptions {
    maxRecords?: number;
  }
}
