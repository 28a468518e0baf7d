/**
 * Badges on a notebook's code cells: one node per cell, kept right as cells
 * move, re-render in the windowed notebook, or run again. Nothing is written
 * into the notebook file.
 */
import { Cell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';
import { CellNoteKind } from '../capture/protocol';
import { SnapshotStore } from '../capture/store';
import { codeCellSources } from '../components/cells';
import { CellCodeNames, cellsAsRun, earlierRuns } from '../engine';
import { oomLines, peakLine } from './history';
import { badgeView, DEFAULT_THRESHOLDS, IBadgeThresholds } from './view';

const BADGE_CLASS = 'jp-CudaMemdiffBadge';

/** Keeps a badge on every executed code cell of one notebook. */
export class CellBadges implements IDisposable {
  constructor(options: CellBadges.IOptions) {
    this._panel = options.panel;
    this._store = options.store;
    this._trans = options.trans ?? nullTranslator.load('jupyterlab_cuda_memdiff');
    this.thresholds = options.thresholds ?? DEFAULT_THRESHOLDS;
    this._onShow = options.onShow ?? null;
    this._store.changed.connect(this.update, this);
    // New, moved or retyped cells; a badge node moves with its cell, and
    // edits inside a cell need no update (modelContentChanged fires per keystroke).
    this._panel.content.model?.cells.changed.connect(this.update, this);
    this.update();
  }

  /** Thresholds that colour the badges. */
  thresholds: IBadgeThresholds;

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Bring every cell's badge up to date. */
  update(): void {
    if (this._isDisposed) {
      return;
    }
    this._cellNames.clear();
    for (const cell of this._panel.content.widgets) {
      this._watch(cell);
      this._render(cell);
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    for (const cell of this._panel.content.widgets) {
      cell.node.querySelector(`:scope > .${BADGE_CLASS}`)?.remove();
    }
    Signal.clearData(this);
  }

  private _watch(cell: Cell): void {
    if (!this._watched.has(cell)) {
      this._watched.add(cell);
      // The windowed notebook re-renders cells that scroll back into view.
      cell.inViewportChanged.connect(() => this._render(cell), this);
    }
  }

  private _render(cell: Cell): void {
    // A note is about the cell's latest run (a snapshot for the cell clears it), so it wins over the
    // figures of an earlier run: those would look like this run's.
    const note = cell.model.type === 'code' ? this._store.noteForCell(cell.model.id) : undefined;
    const record = cell.model.type === 'code' && !note ? this._store.shownForCell(cell.model.id) : undefined;
    let node = cell.node.querySelector<HTMLElement>(`:scope > .${BADGE_CLASS}`);
    if (!record && !note) {
      node?.remove();
      return;
    }
    if (!node) {
      node = document.createElement('div');
      node.className = BADGE_CLASS;
      node.setAttribute('role', 'status');
    }
    // A line of its own between input and outputs, so it never covers code;
    // placed again on each render because the windowed notebook rebuilds cells.
    const outputs = cell.node.querySelector(':scope > .jp-Cell-outputWrapper');
    if (node.parentNode !== cell.node || node.nextSibling !== outputs) {
      cell.node.insertBefore(node, outputs);
    }
    if (!record) {
      // No snapshot, and the kernel said why: say it where the badge would be.
      node.textContent = Private.noteText(note!.note, this._trans);
      node.title = note!.message;
      node.setAttribute('aria-label', note!.message);
      delete node.dataset.cudaMemdiffNetBytes;
      delete node.dataset.cudaMemdiffPeakBytes;
      node.dataset.level = 'note';
      node.onclick = null;
      node.classList.remove(`${BADGE_CLASS}-shows`);
      // Notes are always the current kernel's (a restart drops them): never dimmed as an earlier kernel's figures.
      node.classList.remove(`${BADGE_CLASS}-stale`);
      return;
    }
    const view = badgeView(record, {
      oom: this._store.hadOom(record),
      currentKernelSession: this._store.kernelSession,
      thresholds: this.thresholds,
      trans: this._trans,
      // The helper speaks of the recording it replays now: a record of an earlier replay gets its folder only.
      recording:
        record.replay !== null && record.replay === this._store.helper.replay ? this._store.helper.recording : null,
      roleMoves: this._store.roleMovesOf(record)
    });
    const show = this._onShow;
    const cellId = cell.model.id;
    // The figures lead to their diff, as a step of the panel's chart does; the tooltip says so.
    node.onclick = show ? () => show(cellId) : null;
    node.classList.toggle(`${BADGE_CLASS}-shows`, !!show);
    const description = [view.description, ...this._historyLines(record)].join('\n');
    node.textContent = view.text;
    // Only the pointer's tooltip offers the click: a screen reader meets the status, not a control.
    node.title = show
      ? `${description}\n${this._trans.__('Click for what this run left, by line, in the CUDA Memory panel.')}`
      : description;
    node.setAttribute('aria-label', description);
    node.dataset.cudaMemdiffNetBytes = String(view.netBytes);
    node.dataset.cudaMemdiffPeakBytes = String(view.peakBytes);
    node.dataset.level = view.level;
    node.classList.toggle(`${BADGE_CLASS}-stale`, view.stale);
  }

  /** What the cell's allocation history says: the OOM's why, what made the peak. */
  private _historyLines(record: Parameters<SnapshotStore['peakOf']>[0]): string[] {
    const oom = this._store.oomOf(record);
    const peak = oom ? null : this._store.peakOf(record);
    if (!oom && !peak) {
      return [];
    }
    const cells = this._namesFor(record.kernelSession);
    const lines = oom ? oomLines(oom, cells, this._trans, this._store.runsAtOom(record)) : [];
    const said = peak
      ? peakLine(peak, record.snapshot.frames, cells, this._trans, this._store.runsAtPeak(record))
      : null;
    return said ? [...lines, said] : lines;
  }

  /**
   * The cells as the frames of a snapshot from `kernelSession` name them, by
   * their runs in that kernel, as the panel names them (see cellsAsRun, and
   * earlierRuns for the code cells ran before an edit or before they were
   * deleted). One map per kernel
   * and update of all badges (hashing every cell's source), not one per badge.
   */
  private _namesFor(kernelSession: number): CellCodeNames {
    let names = this._cellNames.get(kernelSession);
    if (!names) {
      const cells = codeCellSources(this._panel.content.widgets.map(c => c.model));
      const runs = this._store.cellRuns;
      // Only code of the notebook's own kernels names its cells (see SnapshotStore.cellCodeFolders).
      names = new CellCodeNames(
        cellsAsRun(cells, runs, kernelSession),
        earlierRuns(cells, runs, kernelSession),
        new Set(this._store.cellCodeFolders)
      );
      this._cellNames.set(kernelSession, names);
    }
    return names;
  }

  private readonly _cellNames = new Map<number, CellCodeNames>();
  private readonly _onShow: ((cellId: string) => void) | null;
  private readonly _panel: NotebookPanel;
  private readonly _store: SnapshotStore;
  private readonly _trans: TranslationBundle;
  private readonly _watched = new WeakSet<Cell>();
  private _isDisposed = false;
}

/** A namespace for CellBadges statics. */
export namespace CellBadges {
  export interface IOptions {
    panel: NotebookPanel;
    store: SnapshotStore;
    thresholds?: IBadgeThresholds;
    /** Translates what the badges say. */
    trans?: TranslationBundle;
    /** A click on a cell's figures: show what that run left (the panel's diff of the cell). */
    onShow?: (cellId: string) => void;
  }
}

/** A namespace for module-private functions. */
namespace Private {
  /** What stands where the badge would be, for a cell the kernel sent a note about. */
  export function noteText(note: CellNoteKind, trans: TranslationBundle): string {
    // Typed by every note the protocol defines: a new one in protocol.py fails the build until it is worded.
    const texts: Record<CellNoteKind, string> = {
      'not-recorded': trans.__('not in the recording'),
      'replayed-already': trans.__('recording already replayed'),
      'replay-skipped': trans.__('skipped in the replay'),
      'replay-raised': trans.__('not replayed: this run raised'),
      'capture-failed': trans.__('no snapshot')
    };
    return new Map<string, string>(Object.entries(texts)).get(note) ?? trans.__('no snapshot');
  }
}
