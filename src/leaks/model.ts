/**
 * State of "Find leaking cell" for the notebook the panel follows: it turns
 * the notebook's records into executions, ranks them with the engine at once
 * from the snapshots alone, then asks the kernel who holds the live blocks
 * and ranks again with the answer. Views render it; the command highlights
 * the cell it names.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { BlockQuery } from '../capture/protocol';
import { CellRecord } from '../capture/store';
import {
  findLeaks,
  IExecutionRetention,
  IExecutionVerdict,
  IHolderAnswer,
  ILeakExecution,
  isAllocated,
  LeakReport,
  retentionByExecution,
  Snapshot
} from '../engine';
import type { IDiffPanel } from '../tokens';

/** One ranked cell execution. */
export interface ILeakEntry {
  readonly verdict: IExecutionVerdict;
  readonly record: CellRecord;
  /** Position of the cell in the notebook (0-based), or null when it is gone. */
  readonly cellIndex: number | null;
  readonly label: string;
}

/** What the finder found, in ranking order. */
export interface ILeakFindings {
  readonly entries: readonly ILeakEntry[];
  /** The cell to look at first, or null when nothing leaks. */
  readonly top: ILeakEntry | null;
  /** Where the holders come from: the kernel, or why they are only guessed. */
  readonly holders: 'pending' | 'kernel' | 'guessed';
  /** What to tell the user about the holders (a partial answer, a replayed session, an error); null when nothing. */
  readonly holdersNote: HoldersNote | null;
}

/** Why the holders are incomplete or only guessed: data, worded by the view. */
export type HoldersNote =
  | { readonly kind: 'no-kernel' }
  | { readonly kind: 'replay'; readonly session: string }
  | { readonly kind: 'failed'; readonly reason: string }
  | { readonly kind: 'partial'; readonly elapsedMs: number };

/** Leak finder state for the panel's notebook. */
export class LeakFinderModel implements IDisposable {
  constructor(panel: IDiffPanel.IModel) {
    this._panel = panel;
    panel.changed.connect(this._onPanelChanged, this);
  }

  /** Emitted when the findings or the state change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The latest findings; null before the first run or after clear(). */
  get findings(): ILeakFindings | null {
    return this._findings;
  }

  /** Why the last run found nothing to rank, if so (a code; the view words it). */
  get error(): LeakFinderModel.Problem | null {
    return this._error;
  }

  /** True while the kernel is being asked. */
  get running(): boolean {
    return this._running;
  }

  /**
   * Rank the followed notebook's cells; resolves with the findings from the
   * snapshots alone, and `refined` resolves once the kernel's holders are in.
   */
  run(): { findings: ILeakFindings | null; refined: Promise<ILeakFindings | null> } {
    const notebook = this._panel.notebook;
    const records = this._records();
    this._findings = null;
    this._error = null;
    if (!notebook || !records.length) {
      this._error = Private.problem(notebook);
      this._changed.emit();
      return { findings: null, refined: Promise.resolve(null) };
    }
    const run = ++this._run;
    const session = this._session(records);
    const offline = findLeaks(session.snapshots, session.executions, { retention: session.retention });
    const ask = notebook.requestHolders;
    this._findings = this._entries(offline, session, ask ? 'pending' : 'guessed', ask ? null : { kind: 'no-kernel' });
    this._running = !!ask;
    this._changed.emit();
    const refined = ask
      ? ask
          .call(notebook, Private.liveBlocks(records[records.length - 1]))
          .then(
            answer => this._refine(run, session, answer),
            reason => this._refine(run, session, null, (reason as Error).message)
          )
      : Promise.resolve(this._findings);
    return { findings: this._findings, refined };
  }

  /** Forget the findings. */
  clear(): void {
    this._run++;
    this._findings = null;
    this._error = null;
    this._running = false;
    this._changed.emit();
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
    this._panel.changed.disconnect(this._onPanelChanged, this);
    Signal.clearData(this);
  }

  private _refine(run: number, session: Private.ISession, answer: IHolderAnswer | null, failure?: string): ILeakFindings | null {
    if (run !== this._run) {
      return this._findings;
    }
    this._running = false;
    let note: HoldersNote | null;
    if (!answer || answer.error || answer.replay !== null) {
      note = answer?.replay
        ? { kind: 'replay', session: answer.replay }
        : { kind: 'failed', reason: String(failure ?? answer?.error) };
      this._findings = { ...this._findings!, holders: 'guessed', holdersNote: note };
    } else {
      note = answer.partial ? { kind: 'partial', elapsedMs: Math.round(answer.elapsedMs) } : null;
      // The snapshots have not changed since the first ranking: its retention still holds.
      const report = findLeaks(session.snapshots, session.executions, { holders: answer.holders, retention: session.retention });
      this._findings = this._entries(report, session, 'kernel', note);
    }
    this._changed.emit();
    return this._findings;
  }

  /** The current kernel session's snapshots after cells, in execution order. */
  private _records(): CellRecord[] {
    const all = this._panel.records;
    const session = all.length ? all[all.length - 1].kernelSession : 0;
    return all.filter(r => r.kernelSession === session);
  }

  /** What both rankings of a run share: executions, snapshots, retention, cell positions. */
  private _session(records: readonly CellRecord[]): Private.ISession {
    const cells = this._panel.notebook?.cells() ?? [];
    const cellIndex = records.map(r => cells.findIndex(c => c.id === r.cellId));
    const executions = records.map((r, k) => {
      // Named as the stack frames name cells: by execution count, what the notebook shows.
      const count = `[${r.executionCount ?? ' '}]`;
      return {
        cellId: r.cellId ?? `execution ${k}`,
        executionCount: r.executionCount,
        source: cellIndex[k] >= 0 ? cells[cellIndex[k]].source : null,
        error: r.error,
        label: cellIndex[k] >= 0 ? `Cell ${count}` : `A deleted cell ${count}`
      };
    });
    const snapshots = records.map(r => r.snapshot);
    return { records, executions, snapshots, retention: retentionByExecution(snapshots), cellIndex };
  }

  private _entries(
    report: LeakReport,
    session: Private.ISession,
    holders: ILeakFindings['holders'],
    holdersNote: HoldersNote | null
  ): ILeakFindings {
    const entries = report.ranking.map(k => ({
      verdict: report.executions[k],
      record: session.records[k],
      cellIndex: session.cellIndex[k] >= 0 ? session.cellIndex[k] : null,
      label: session.executions[k].label
    }));
    const top = report.topLeak === null ? null : (entries.find(e => e.verdict.execution === report.topLeak) ?? null);
    return { entries, top, holders, holdersNote };
  }

  private _onPanelChanged(): void {
    // Findings belong to one notebook: following another drops them.
    if (this._findings && this._notebook !== this._panel.notebook) {
      this.clear();
    }
    this._notebook = this._panel.notebook;
  }

  private readonly _panel: IDiffPanel.IModel;
  private _isDisposed = false;
  private _notebook = null as IDiffPanel.IModel['notebook'];
  private _findings: ILeakFindings | null = null;
  private _error: LeakFinderModel.Problem | null = null;
  private _running = false;
  private _run = 0;
  private readonly _changed = new Signal<this, void>(this);
}

/** A namespace for LeakFinderModel statics. */
export namespace LeakFinderModel {
  /**
   * Why there is nothing to rank: no notebook; a kernel that takes no GPU
   * snapshots (not Python, no torch, torch without CUDA, capture off); or
   * no cell has run yet.
   */
  export type Problem = 'no-notebook' | 'not-python' | 'no-torch' | 'no-cuda' | 'capture-off' | 'no-snapshots';
}

namespace Private {
  /** Why a notebook has no snapshots to rank. */
  export function problem(notebook: IDiffPanel.IModel['notebook']): LeakFinderModel.Problem {
    if (!notebook) {
      return 'no-notebook';
    }
    const status = notebook.store.helper.status;
    switch (status) {
      case 'not-python':
      case 'no-cuda':
      case 'capture-off':
        return status;
      case 'waiting-for-torch':
        return 'no-torch';
      default:
        return 'no-snapshots';
    }
  }

  /** One run's inputs, computed once for both rankings. */
  export interface ISession {
    readonly records: readonly CellRecord[];
    readonly executions: readonly ILeakExecution[];
    readonly snapshots: readonly Snapshot[];
    readonly retention: readonly IExecutionRetention[];
    /** Position of each record's cell in the notebook, -1 when it is gone. */
    readonly cellIndex: readonly number[];
  }

  /** Most blocks asked about in one request: the largest first. */
  export const MAX_QUERIES = 20000;

  /** The allocated blocks of a record's snapshot, largest first. */
  export function liveBlocks(record: CellRecord): BlockQuery[] {
    return record.snapshot.blocks
      .filter(isAllocated)
      .sort((a, b) => b.size - a.size)
      .slice(0, MAX_QUERIES)
      .map(b => [b.device, b.address, b.size]);
  }
}
