/**
 * State of "Find leaking cell" for the notebook the panel follows: it turns
 * the notebook's records into executions, ranks them with the engine at once
 * from the snapshots alone, then asks the kernel who holds the live blocks
 * and ranks again with the answer. Views render it; the command highlights
 * the cell it names.
 */
import { ISignal, Signal } from '@lumino/signaling';
import { BlockQuery } from '../capture/protocol';
import { CellRecord } from '../capture/store';
import { findLeaks, IExecutionVerdict, IHolderAnswer, ILeakExecution, isAllocated, LeakReport, Snapshot } from '../engine';
import { DiffPanelModel } from '../panel/model';

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
  /** Said to the user about the holders (a partial answer, a replayed session, an error). */
  readonly holdersNote: string;
}

/** Leak finder state for the panel's notebook. */
export class LeakFinderModel {
  constructor(panel: DiffPanelModel) {
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

  /** Why the last run found nothing to rank, if so. */
  get error(): string | null {
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
      this._error = notebook
        ? 'No GPU memory snapshots yet: run some cells first.'
        : 'Open a notebook whose kernel takes GPU memory snapshots.';
      this._changed.emit();
      return { findings: null, refined: Promise.resolve(null) };
    }
    const run = ++this._run;
    const executions = this._executions(records);
    const snapshots = records.map(r => r.snapshot);
    const offline = findLeaks(snapshots, executions);
    const ask = notebook.requestHolders;
    this._findings = this._entries(offline, records, executions, ask ? 'pending' : 'guessed', ask ? '' : 'No kernel to ask: holders are guessed from the cells\u2019 sources.');
    this._running = !!ask;
    this._changed.emit();
    const refined = ask
      ? ask
          .call(notebook, Private.liveBlocks(records[records.length - 1]))
          .then(
            answer => this._refine(run, snapshots, executions, records, answer),
            reason => this._refine(run, snapshots, executions, records, null, (reason as Error).message)
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

  dispose(): void {
    this._panel.changed.disconnect(this._onPanelChanged, this);
    Signal.clearData(this);
  }

  private _refine(
    run: number,
    snapshots: readonly Snapshot[],
    executions: ILeakExecution[],
    records: readonly CellRecord[],
    answer: IHolderAnswer | null,
    failure?: string
  ): ILeakFindings | null {
    if (run !== this._run) {
      return this._findings;
    }
    this._running = false;
    let note: string;
    if (!answer || answer.error || answer.replay !== null) {
      note = answer?.replay
        ? `Replayed session (${answer.replay}): no live tensors to ask about, so holders are guessed from the cells\u2019 sources.`
        : `The kernel could not say who holds the memory (${failure ?? answer?.error}); holders are guessed from the cells\u2019 sources.`;
      this._findings = { ...this._findings!, holders: 'guessed', holdersNote: note };
    } else {
      note = answer.partial ? `The kernel ran out of time after ${Math.round(answer.elapsedMs)} ms: holders are partial.` : '';
      const report = findLeaks(snapshots, executions, { holders: answer.holders });
      this._findings = this._entries(report, records, executions, 'kernel', note);
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

  private _executions(records: readonly CellRecord[]): ILeakExecution[] {
    const cells = this._panel.notebook?.cells() ?? [];
    return records.map((r, k) => {
      const index = cells.findIndex(c => c.id === r.cellId);
      // Named as the stack frames name cells: by execution count, what the notebook shows.
      const count = `[${r.executionCount ?? ' '}]`;
      return {
        cellId: r.cellId ?? `execution ${k}`,
        executionCount: r.executionCount,
        source: index >= 0 ? cells[index].source : null,
        error: r.error,
        label: index >= 0 ? `Cell ${count}` : `A deleted cell ${count}`
      };
    });
  }

  private _entries(
    report: LeakReport,
    records: readonly CellRecord[],
    executions: readonly ILeakExecution[],
    holders: ILeakFindings['holders'],
    holdersNote: string
  ): ILeakFindings {
    const cells = this._panel.notebook?.cells() ?? [];
    const entries = report.ranking.map(k => {
      const index = cells.findIndex(c => c.id === records[k].cellId);
      return { verdict: report.executions[k], record: records[k], cellIndex: index >= 0 ? index : null, label: executions[k].label };
    });
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

  private readonly _panel: DiffPanelModel;
  private _notebook = null as DiffPanelModel['notebook'];
  private _findings: ILeakFindings | null = null;
  private _error: string | null = null;
  private _running = false;
  private _run = 0;
  private readonly _changed = new Signal<this, void>(this);
}

namespace Private {
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
