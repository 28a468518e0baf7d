/**
 * State of the diff panel: which notebook it follows, which snapshot is
 * selected, the pair being compared and the frame filter. It calls the
 * engine and caches the result; the React views only render it.
 */
import { ISignal, Signal } from '@lumino/signaling';
import { CellRecord, SnapshotStore } from '../capture/store';
import {
  AllocationSite,
  CellCodeNames,
  diffSnapshots,
  emptySnapshot,
  groupBySite,
  ICellSource,
  Snapshot,
  SnapshotDiff
} from '../engine';

/** A notebook as the panel needs it: its snapshots and its cells' sources. */
export interface IFollowedNotebook {
  readonly title: string;
  readonly store: SnapshotStore;
  /** The code cells as they are now (id and source). */
  cells(): ICellSource[];
}

/** The two snapshots being compared. */
export interface IComparison {
  /** Null before the first cell of a kernel session: an empty device. */
  readonly before: CellRecord | null;
  readonly after: CellRecord;
}

/** Model of the diff panel. */
export class DiffPanelModel {
  /** Emitted when anything the views show changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get notebook(): IFollowedNotebook | null {
    return this._notebook;
  }

  /** Follow another notebook (or none). */
  setNotebook(notebook: IFollowedNotebook | null): void {
    if (notebook === this._notebook) {
      return;
    }
    this._notebook?.store.changed.disconnect(this._onStoreChanged, this);
    this._notebook = notebook;
    this._selected = null;
    this._invalidate();
    notebook?.store.changed.connect(this._onStoreChanged, this);
    this._changed.emit();
  }

  /** Snapshots after cells (not OOM-time ones), in execution order. */
  get records(): readonly CellRecord[] {
    return this._notebook ? this._notebook.store.records.filter(r => r.reason === 'cell') : [];
  }

  /** The selected record; the latest one until the user picks another. */
  get selected(): CellRecord | null {
    const records = this.records;
    if (this._selected && records.includes(this._selected)) {
      return this._selected;
    }
    return records.length ? records[records.length - 1] : null;
  }

  /** Select a record (its diff against the cell before it is shown). */
  select(record: CellRecord | null): void {
    this._selected = record;
    this._invalidate();
    this._changed.emit();
  }

  /** Show every frame instead of the filtered stack. */
  get showAllFrames(): boolean {
    return this._showAllFrames;
  }

  set showAllFrames(value: boolean) {
    if (value !== this._showAllFrames) {
      this._showAllFrames = value;
      this._groups = null;
      this._changed.emit();
    }
  }

  /** The selected cell's before and after. */
  get comparison(): IComparison | null {
    const after = this.selected;
    if (!after) {
      return null;
    }
    const records = this.records;
    let before: CellRecord | null = null;
    for (let i = records.indexOf(after) - 1; i >= 0; i--) {
      if (records[i].kernelSession === after.kernelSession) {
        before = records[i];
        break;
      }
    }
    return { before, after };
  }

  /** The block-level diff of the comparison. */
  get diff(): SnapshotDiff | null {
    if (this._diff === null) {
      const pair = this.comparison;
      if (pair && this._notebook) {
        const before: Snapshot =
          pair.before?.snapshot ?? emptySnapshot(this._notebook.store.frames, pair.after.snapshot.totals.length);
        this._diff = diffSnapshots(before, pair.after.snapshot);
      }
    }
    return this._diff;
  }

  /** The diff's allocation sites, largest change first. */
  get groups(): readonly AllocationSite[] {
    if (this._groups === null) {
      const diff = this.diff;
      this._groups = diff ? groupBySite(diff, { allFrames: this._showAllFrames }) : [];
    }
    return this._groups;
  }

  /** Maps frame filenames to this notebook's cells, with their latest execution counts. */
  cellNames(): CellCodeNames {
    const latest = new Map<string, number | null>();
    for (const r of this.records) {
      if (r.cellId) {
        latest.set(r.cellId, r.executionCount);
      }
    }
    const cells = (this._notebook?.cells() ?? []).map(c => ({ ...c, executionCount: latest.get(c.id) ?? null }));
    return new CellCodeNames(cells);
  }

  dispose(): void {
    this.setNotebook(null);
    Signal.clearData(this);
  }

  private _onStoreChanged(): void {
    this._invalidate();
    this._changed.emit();
  }

  private _invalidate(): void {
    this._diff = null;
    this._groups = null;
  }

  private _notebook: IFollowedNotebook | null = null;
  private _selected: CellRecord | null = null;
  private _showAllFrames = false;
  private _diff: SnapshotDiff | null = null;
  private _groups: AllocationSite[] | null = null;
  private _changed = new Signal<this, void>(this);
}
