/**
 * State of the diff panel: which notebook it follows, which snapshot is
 * selected, the pair being compared and the frame filter. It calls the
 * engine and caches the result; the React views only render it.
 */
import { ActivityMonitor } from '@jupyterlab/coreutils';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { CellRecord } from '../capture/store';
import type { IFollowedNotebook } from '../tokens';
import {
  AllocationSite,
  BlockRoles,
  CellCodeNames,
  cellsAsRun,
  diffSnapshots,
  earlierRuns,
  emptySnapshot,
  FrameTable,
  groupByRole,
  groupBySite,
  ICellSource,
  IRoleGroup,
  IRoleMove,
  IRunMismatch,
  IRunName,
  reframe,
  roleMoves,
  runMismatch,
  runNames,
  Snapshot,
  SnapshotDiff
} from '../engine';
import { runTagText } from '../components/runNames';
import type { IFileOom } from '../worker/files';

// The followed notebook is part of the public contract; re-exported for the panel's users.
export type { IFollowedNotebook };

/** A snapshot file opened in the panel (a pickle from _dump_snapshot, or JSON). */
export interface ISnapshotFile {
  /** The file's name, without folders. */
  readonly name: string;
  /** Its path on the server; null for a file dropped on the panel. */
  readonly path: string | null;
  /** Its blocks and segments, parsed once in the engine worker, in a frame table of their own (no bytes, no trace). */
  readonly snapshot: Snapshot;
  /** The post-mortem of the out-of-memory error its trace records, read by the engine worker; null without one. */
  readonly oom: IFileOom | null;
}

/** A part of the panel an action can bring into view. */
export type PanelSection = 'leaks' | 'chart' | 'fileOom' | 'diff' | 'segments';

/** One side of a comparison: nothing, a notebook cell's snapshot, or a file. */
export type SnapshotRef =
  | { readonly kind: 'empty' }
  | { readonly kind: 'record'; readonly record: CellRecord }
  | { readonly kind: 'file'; readonly file: ISnapshotFile };

/** How the diff groups its blocks: by allocation site, or by role and then by site. */
export type DiffGrouping = 'site' | 'role';

/** The two snapshots being compared. */
export interface IComparison {
  readonly before: SnapshotRef;
  readonly after: SnapshotRef;
}

const EMPTY: SnapshotRef = { kind: 'empty' };

/** Model of the diff panel. */
export class DiffPanelModel implements IDisposable {
  constructor(options: DiffPanelModel.IOptions = {}) {
    this._trans = options.trans ?? nullTranslator.load('jupyterlab_cuda_memdiff');
  }

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
    this._notebook?.cellsChanged?.disconnect(this._onCellsChanged, this);
    this._edits?.dispose();
    this._edits = null;
    this._notebook = notebook;
    this._cellNames.clear();
    this._selected = null;
    this._custom = null;
    this._invalidate();
    notebook?.store.changed.connect(this._onStoreChanged, this);
    notebook?.cellsChanged?.connect(this._onCellsChanged, this);
    if (notebook?.contentChanged) {
      // Once typing pauses, not per key: the views redraw only where a name changed.
      this._edits = new ActivityMonitor({ signal: notebook.contentChanged, timeout: DiffPanelModel.EDIT_SETTLE_MS });
      this._edits.activityStopped.connect(this._onEditsSettled, this);
    }
    this._changed.emit();
  }

  /** Snapshots after cells (not OOM-time ones), in execution order. */
  get records(): readonly CellRecord[] {
    return this._notebook ? this._notebook.store.cellRuns : [];
  }

  /**
   * The selected record: the latest one, or the one the user selected since
   * the latest cell ran. A cell that runs afterwards (Run All after a restart
   * included) takes the selection: what the user just ran is what they want
   * to see. A pair picked in the pickers stays until they leave it.
   */
  get selected(): CellRecord | null {
    const records = this.records;
    const latest = records.length ? records[records.length - 1] : null;
    if (this._selected && latest === this._selectedWhileLatest && records.includes(this._selected)) {
      return this._selected;
    }
    return latest;
  }

  /** Select a record: its diff against the cell before it is shown. */
  select(record: CellRecord | null): void {
    this._selected = record;
    const records = this.records;
    this._selectedWhileLatest = records.length ? records[records.length - 1] : null;
    this._custom = null;
    this._invalidate();
    this._changed.emit();
  }

  /** Snapshot files opened in the panel, oldest first. */
  get files(): readonly ISnapshotFile[] {
    return this._files;
  }

  /** The last file that could not be read, with the reason; null when none. */
  get fileError(): string | null {
    return this._fileError;
  }

  /**
   * Show a snapshot file against an empty device: files opened earlier may be
   * unrelated, so the user picks what to compare it with. Opening a path
   * already open replaces that file. The snapshot and its post-mortem come
   * from the engine worker (opened or dropped alike); the panel never parses bytes.
   */
  addFile(name: string, snapshot: Snapshot, path: string | null = null, oom: IFileOom | null = null): ISnapshotFile {
    const file: ISnapshotFile = { name, path, snapshot, oom };
    const same = path === null ? undefined : this._files.find(f => f.path === path);
    this._files = same ? this._files.map(f => (f === same ? file : f)) : [...this._files, file];
    this._fileError = null;
    this.compare(EMPTY, { kind: 'file', file });
    return file;
  }

  /** Note a file that could not be read, with its one-line reason; everything else stays as it was. */
  fileUnreadable(name: string, reason: string): void {
    this._fileError = `${name}: ${reason}`;
    this._changed.emit();
  }

  /** Take away the note of a file that could not be read (the user dismissed it). */
  dismissFileError(): void {
    if (this._fileError !== null) {
      this._fileError = null;
      this._changed.emit();
    }
  }

  /** Close an opened file; a comparison that showed it falls back to the default. */
  removeFile(file: ISnapshotFile): void {
    if (!this._files.includes(file)) {
      return;
    }
    this._files = this._files.filter(f => f !== file);
    const pair = this._custom;
    if (pair && [pair.before, pair.after].some(ref => ref.kind === 'file' && ref.file === file)) {
      const last = this._files[this._files.length - 1];
      this._custom = !this.records.length && last ? { before: EMPTY, after: { kind: 'file', file: last } } : null;
    }
    this._invalidate();
    this._changed.emit();
  }

  /** Names that tell the opened files apart: a file's name, with as many of its folders as needed. */
  fileLabel(file: ISnapshotFile): string {
    const k = this._files.indexOf(file);
    return k < 0 ? file.name : distinctFileNames(this._files.map(f => f.path ?? f.name))[k];
  }

  /**
   * A record's run as data: its count, and its kernel (from 1) once the
   * records span a restart (counts start again in each kernel), else null.
   */
  runOf(record: CellRecord): IRunName {
    const records = this.records;
    // The store only appends records and drops the oldest: its ends and length tell whether the names still hold.
    const key = [records.length, records[0], records[records.length - 1]] as const;
    const cached = this._runNames;
    if (!cached || cached.key.some((v, i) => v !== key[i])) {
      this._runNames = { key, names: runNames(records) };
    }
    const k = records.indexOf(record);
    return k < 0 ? { executionCount: record.executionCount, kernel: null } : this._runNames!.names[k];
  }

  /** A record's tag as the panel names its run, in the user's language: `[4]`, `[4] in kernel 2` (see runOf). */
  runTag(record: CellRecord): string {
    return runTagText(this.runOf(record), this._trans);
  }

  /** Emitted when an action asks the views to bring a section into view. */
  get revealRequested(): ISignal<this, PanelSection> {
    return this._revealRequested;
  }

  /**
   * The section a file opens on: its out-of-memory post-mortem where it has
   * one (what a person opens an OOM dump for), else its diff.
   */
  openingSection(file: ISnapshotFile): PanelSection {
    return file.oom ? 'fileOom' : 'diff';
  }

  /** Ask the views to open a section and scroll it into view. */
  reveal(section: PanelSection): void {
    this._revealRequested.emit(section);
  }

  /** Compare any two snapshots: the notebook's, files, or an empty device. */
  compare(before: SnapshotRef, after: SnapshotRef): void {
    this._custom = { before, after };
    this._invalidate();
    this._changed.emit();
  }

  /** Frames every snapshot the panel compares is read into. */
  get frames(): FrameTable {
    return this._notebook?.store.frames ?? this._ownFrames;
  }

  /** The snapshot a reference stands for, in the panel's frame table. */
  snapshotOf(ref: SnapshotRef): Snapshot {
    if (ref.kind === 'record') {
      return ref.record.snapshot;
    }
    if (ref.kind === 'empty') {
      return emptySnapshot(this.frames);
    }
    let cached = this._fileSnapshots.get(ref.file);
    if (!cached || cached.frames !== this.frames) {
      // Re-interned into the panel's frame table, so it diffs against the notebook's snapshots.
      cached = reframe(ref.file.snapshot, this.frames);
      this._fileSnapshots.set(ref.file, cached);
    }
    return cached;
  }

  /** Device the chart shows; null for the sum over devices. */
  get device(): number | null {
    return this._device;
  }

  set device(value: number | null) {
    if (value !== this._device) {
      this._device = value;
      this._changed.emit();
    }
  }

  /** Devices the notebook's snapshots hold memory on. */
  get devices(): number[] {
    const seen = new Set<number>();
    for (const r of this.records) {
      r.snapshot.totals.forEach(t => seen.add(t.device));
    }
    return [...seen].sort((a, b) => a - b);
  }

  /** Show every frame instead of the filtered stack. */
  get showAllFrames(): boolean {
    return this._showAllFrames;
  }

  set showAllFrames(value: boolean) {
    if (value !== this._showAllFrames) {
      this._showAllFrames = value;
      this._groups = null;
      this._roleGroups = undefined;
      this._changed.emit();
    }
  }

  /** What is compared: what the user picked, else the selected cell against the cell before it. */
  get comparison(): IComparison | null {
    if (this._custom) {
      return this._custom;
    }
    const after = this.selected;
    if (!after) {
      return null;
    }
    const records = this.records;
    for (let i = records.indexOf(after) - 1; i >= 0; i--) {
      if (records[i].kernelSession === after.kernelSession) {
        return { before: { kind: 'record', record: records[i] }, after: { kind: 'record', record: after } };
      }
    }
    return { before: EMPTY, after: { kind: 'record', record: after } };
  }

  /**
   * The notebook cell whose snapshot the diff shows (the comparison's later
   * side); null when that is a file or an empty device.
   */
  get shownRecord(): CellRecord | null {
    const after = this.comparison?.after;
    return after?.kind === 'record' ? after.record : null;
  }

  /** True when the user picked the pair (not the selected cell's default). */
  get isCustomComparison(): boolean {
    return this._custom !== null;
  }

  /** The block-level diff of the comparison. */
  get diff(): SnapshotDiff | null {
    if (this._diff === null) {
      const pair = this.comparison;
      if (pair) {
        this._diff = diffSnapshots(this.snapshotOf(pair.before), this.snapshotOf(pair.after));
      }
    }
    return this._diff;
  }

  /**
   * Why the compared snapshots look like two runs' (engine's runMismatch), so
   * the view can say the diff is no leak; null when they look like one run's.
   * Asked only where a side is a file: two cells of the notebook are told
   * apart by their kernel session, and an empty device shares nothing.
   */
  get differentRuns(): IRunMismatch | null {
    if (this._differentRuns === undefined) {
      const pair = this.comparison;
      const sides = pair ? [pair.before, pair.after] : [];
      this._differentRuns =
        pair && sides.some(r => r.kind === 'file') && sides.every(r => r.kind !== 'empty')
          ? runMismatch(this.snapshotOf(pair.before), this.snapshotOf(pair.after))
          : null;
    }
    return this._differentRuns;
  }

  /** The diff's allocation sites, largest change first. */
  get groups(): readonly AllocationSite[] {
    if (this._groups === null) {
      const diff = this.diff;
      this._groups = diff ? groupBySite(diff, { allFrames: this._showAllFrames }) : [];
    }
    return this._groups;
  }

  /** How the diff groups its blocks; by role only where both sides have per-block roles. */
  get grouping(): DiffGrouping {
    return this._grouping;
  }

  set grouping(value: DiffGrouping) {
    if (value !== this._grouping) {
      this._grouping = value;
      this._changed.emit();
    }
  }

  /**
   * Each allocated block's role in a compared snapshot: a cell's from the
   * kernel, none for an empty device; null for a file or a cell the kernel
   * sent no per-block roles for.
   */
  rolesOf(ref: SnapshotRef): BlockRoles | null {
    if (ref.kind === 'empty') {
      return Private.NO_BLOCKS;
    }
    return ref.kind === 'record' ? (this._notebook?.store.blockRolesOf(ref.record) ?? null) : null;
  }

  /** Whether both compared snapshots have per-block roles, so the diff can group by role. */
  get canGroupByRole(): boolean {
    const pair = this.comparison;
    return pair !== null && this.rolesOf(pair.before) !== null && this.rolesOf(pair.after) !== null;
  }

  /**
   * The diff grouped by role, then by site (born blocks take their role
   * after the change, freed ones the role they had before it); null when a
   * side has no per-block roles.
   */
  get roleGroups(): readonly IRoleGroup[] | null {
    if (this._roleGroups === undefined) {
      const roles = this._comparedRoles();
      this._roleGroups = roles
        ? groupByRole(roles.diff, roles.before, roles.after, { allFrames: this._showAllFrames })
        : null;
    }
    return this._roleGroups;
  }

  /**
   * Blocks both compared snapshots hold that changed role: what a cell's
   * change by role (its badge) counts and the diff by role cannot; null
   * when a side has no per-block roles.
   */
  get roleMoves(): readonly IRoleMove[] | null {
    if (this._roleMoves === undefined) {
      const roles = this._comparedRoles();
      this._roleMoves = roles
        ? roleMoves(roles.diff, this.snapshotOf(roles.pair.after), roles.before, roles.after)
        : null;
    }
    return this._roleMoves;
  }

  /** The compared pair, its diff and both sides' per-block roles; null where a side has none. */
  private _comparedRoles(): {
    pair: IComparison;
    diff: SnapshotDiff;
    before: BlockRoles;
    after: BlockRoles;
  } | null {
    const pair = this.comparison;
    const diff = this.diff;
    const before = pair ? this.rolesOf(pair.before) : null;
    const after = pair ? this.rolesOf(pair.after) : null;
    return pair && diff && before && after ? { pair, diff, before, after } : null;
  }

  /**
   * Maps frame filenames to this notebook's cells, each named by its run in
   * kernel session `kernelSession` (see cellsAsRun; by default the latest
   * record's, the kernel running now). The same object is returned while
   * the cells, their sources and their runs are unchanged, so views that
   * depend on it (the segment map's layout) are not recomputed on every render.
   */
  cellNames(kernelSession?: number | null): CellCodeNames {
    const records = this.records;
    const kernel = kernelSession !== undefined ? kernelSession : (records[records.length - 1]?.kernelSession ?? null);
    const now = this._notebook?.cells() ?? [];
    const cells = cellsAsRun(now, records, kernel);
    // The code cells ran before they were edited, or before they were deleted: their runs' frames still say which.
    const earlier = earlierRuns(now, records, kernel);
    // Only code of the notebook's own kernels names its cells: a file from another process does not.
    const folders = this._notebook?.store.cellCodeFolders ?? new Set<string>();
    const cached = this._cellNames.get(kernel);
    if (
      cached !== undefined &&
      cached.folders === folders.size &&
      Private.sameCells(cached.cells, cells) &&
      Private.sameCells(cached.earlier, earlier)
    ) {
      return cached.names;
    }
    // One map per kernel the views name cells for (a restart adds one; another notebook starts afresh).
    const names = new CellCodeNames(cells, earlier, new Set(folders));
    this._cellNames.set(kernel, { cells, earlier, names, folders: folders.size });
    return names;
  }

  /**
   * The names for the frames of compared snapshots: by the kernel of the
   * first of `refs` that is a notebook cell's (a file's or an empty device's
   * frames get the kernel running now).
   */
  cellNamesFor(...refs: SnapshotRef[]): CellCodeNames {
    const ref = refs.find(r => r.kind === 'record');
    return this.cellNames(ref?.kind === 'record' ? ref.record.kernelSession : undefined);
  }

  /** Whether the model was disposed. */
  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.setNotebook(null);
    Signal.clearData(this);
  }

  /** Views redraw: cellNames() sees whether a name changed (it keeps its map while none did). */
  private _onCellsChanged(): void {
    this._changed.emit();
  }

  /**
   * The cells' contents changed (an edit, an output): the views redraw where
   * a frame reads otherwise now, i.e. where a kernel's names the views use
   * changed; an output, or a markdown cell, changes none.
   */
  private _onEditsSettled(): void {
    const stale = [...this._cellNames.entries()].some(([kernel, { names }]) => this.cellNames(kernel) !== names);
    if (stale) {
      this._changed.emit();
    }
  }

  private _onStoreChanged(): void {
    this._invalidate();
    this._changed.emit();
  }

  private _invalidate(): void {
    this._diff = null;
    this._differentRuns = undefined;
    this._groups = null;
    this._roleGroups = undefined;
    this._roleMoves = undefined;
  }

  private _isDisposed = false;
  private _notebook: IFollowedNotebook | null = null;
  private _edits: ActivityMonitor<unknown, unknown> | null = null;
  private _custom: IComparison | null = null;
  private _device: number | null = null;
  private _files: ISnapshotFile[] = [];
  private _fileError: string | null = null;
  private readonly _ownFrames = new FrameTable();
  private readonly _fileSnapshots = new WeakMap<ISnapshotFile, Snapshot>();
  private _selected: CellRecord | null = null;
  /** The latest record when the user selected `_selected`: a later one ends the selection. */
  private _selectedWhileLatest: CellRecord | null = null;
  // The folders only grow: their number tells whether a kernel added one.
  private readonly _cellNames = new Map<
    number | null,
    { cells: ICellSource[]; earlier: ICellSource[]; names: CellCodeNames; folders: number }
  >();
  private _runNames: { key: readonly [number, CellRecord?, CellRecord?]; names: IRunName[] } | null = null;
  private readonly _trans: TranslationBundle;
  private _showAllFrames = false;
  private _diff: SnapshotDiff | null = null;
  private _differentRuns: IRunMismatch | null | undefined = undefined;
  private _groups: AllocationSite[] | null = null;
  private _grouping: DiffGrouping = 'site';
  private _roleGroups: readonly IRoleGroup[] | null | undefined = undefined;
  private _roleMoves: readonly IRoleMove[] | null | undefined = undefined;
  private _changed = new Signal<this, void>(this);
  private _revealRequested = new Signal<this, PanelSection>(this);
}

/** A namespace for DiffPanelModel statics. */
export namespace DiffPanelModel {
  /** How long typing in a cell pauses before the panel reads frames against the edit. */
  export const EDIT_SETTLE_MS = 400;
}

/**
 * Short names that tell paths apart: each path's last part, with as many
 * folders before it as it takes to differ from every other path; identical
 * paths are numbered.
 */
export function distinctFileNames(paths: readonly string[]): string[] {
  const parts = paths.map(p => p.split('/').filter(Boolean));
  const names = parts.map(() => '');
  const depth = parts.map(() => 1);
  const suffix = (k: number) => parts[k].slice(Math.max(0, parts[k].length - depth[k])).join('/');
  for (let k = 0; k < parts.length; k++) {
    for (;;) {
      names[k] = suffix(k);
      const clash = parts.some((p, j) => j !== k && paths[j] !== paths[k] && suffixOf(p, depth[k]) === names[k]);
      if (!clash || depth[k] >= parts[k].length) {
        break;
      }
      depth[k]++;
    }
  }
  // The same path twice (two dropped files of one name): number them.
  return names.map((name, k) => {
    const twins = paths.filter(p => p === paths[k]).length;
    return twins > 1 ? `${name} (${paths.slice(0, k + 1).filter(p => p === paths[k]).length})` : name;
  });
}

function suffixOf(parts: readonly string[], depth: number): string {
  return parts.slice(Math.max(0, parts.length - depth)).join('/');
}

/** A namespace for DiffPanelModel statics. */
export namespace DiffPanelModel {
  /** Options to create the model. */
  export interface IOptions {
    /** Words the panel's own strings (run tags) through; English when absent. */
    trans?: TranslationBundle;
  }
}

namespace Private {
  /** The roles of an empty device: no blocks. */
  export const NO_BLOCKS = new BlockRoles([]);

  /** Whether two lists name the same cells alike: same ids, code, runs and places. */
  export function sameCells(a: readonly ICellSource[], b: readonly ICellSource[]): boolean {
    return (
      a.length === b.length &&
      a.every(
        (c, i) =>
          c.id === b[i].id &&
          c.source === b[i].source &&
          c.sourceAsRun === b[i].sourceAsRun &&
          c.deleted === b[i].deleted &&
          c.executionCount === b[i].executionCount &&
          c.kernel === b[i].kernel &&
          // A cell that has not run is named by its place, which moves when any cell is added, moved or deleted.
          c.position?.index === b[i].position?.index &&
          c.position?.total === b[i].position?.total
      )
    );
  }
}
