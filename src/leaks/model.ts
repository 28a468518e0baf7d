/**
 * State of "Find leaking cell" for the notebook the panel follows: it turns
 * the notebook's records into executions, ranks them in the engine worker
 * from the snapshots alone, then asks the kernel who holds the live blocks
 * and ranks again with the answer. The page only encodes the snapshots (a
 * slice at a time) and renders: ranking a 40,000-block session never blocks
 * it. Views render the state; the command highlights the cell it names.
 */
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';
import { BlockQuery, IRecordingAbout } from '../capture/protocol';
import { sourceHeadline } from '../components/cells';
import { CellRecord } from '../capture/store';
import {
  encodeFrames,
  encodeSnapshot,
  IEncodedSession,
  IEncodedSnapshot,
  IExecutionVerdict,
  IHolderAnswer,
  ILeakExecution,
  INoStacks,
  IRankLeaksResult,
  LeakReport,
  roleCodes,
  runNames,
  sessionBuffers,
  Snapshot
} from '../engine';
import { cellNameText, runTagText } from '../components/runNames';
import type { IDiffPanel, IEngineWorker, ISnapshotStore } from '../tokens';
import { EngineWorker } from '../worker/client';

/** One ranked cell execution. */
export interface ILeakEntry {
  readonly verdict: IExecutionVerdict;
  readonly record: CellRecord;
  /** Position of the cell in the notebook (0-based), or null when it is gone. */
  readonly cellIndex: number | null;
  readonly label: string;
  /**
   * Where the cell's prompt no longer shows this run (the cell ran again, or its count was cleared): how
   * else to find it; null where the prompt shows this run, or the cell is gone.
   */
  readonly earlierRun: ILeakEntry.IEarlierRun | null;
}

/** A namespace for ILeakEntry's types. */
export namespace ILeakEntry {
  /** A run the cell's prompt no longer shows, and the cell as a person finds it without that count. */
  export interface IEarlierRun {
    /** The run as the chart names it: `[3]`, `[3] in kernel 2`. */
    readonly run: string;
    /** The count the cell's prompt shows now; null for none (cleared, or `[*]` while it runs). */
    readonly prompt: number | null;
    /** The cell's first line, as a label quotes it. */
    readonly headline: string;
    /** Where the cell sits, counting every cell from 1, as the status bar's "Cell 5/10"; null where unknown. */
    readonly position: { readonly index: number; readonly total: number } | null;
  }
}

/** What the finder found, in ranking order. */
export interface ILeakFindings {
  readonly entries: readonly ILeakEntry[];
  /** The cell to look at first, or null when nothing leaks. */
  readonly top: ILeakEntry | null;
  /** How the findings name each execution of the session, by position (`Cell [3]`). */
  readonly labels: readonly string[];
  /** Where the holders come from: the kernel, or why they are only guessed. */
  readonly holders: 'pending' | 'kernel' | 'guessed';
  /** What to tell the user about the holders (a partial answer, a replayed session, an error); null when nothing. */
  readonly holdersNote: HoldersNote | null;
  /** Memory no allocation stack explains (allocation history off); null when every snapshot has stacks. */
  readonly noStacks: INoStacks | null;
}

/**
 * Whether no cell of the ranked runs shows a count now, for two runs or
 * more (outputs cleared, or the notebook reopened without them): then each
 * entry would say "an earlier run" beside its name, and the view says it
 * once above the list instead.
 */
export function countsCleared(entries: readonly ILeakEntry[]): boolean {
  const inCells = entries.filter(e => e.cellIndex !== null);
  return inCells.length > 1 && inCells.every(e => e.earlierRun !== null && e.earlierRun.prompt === null);
}

/** Why the holders are incomplete or only guessed: data, worded by the view. */
export type HoldersNote =
  | { readonly kind: 'no-kernel' }
  /** A replayed session (`session`: the recording's folder; `recording`: what it says of itself, if known). */
  | { readonly kind: 'replay'; readonly session: string; readonly recording: IRecordingAbout | null }
  /** A replayed session whose recording kept the kernel's holders (partial: its search ran out of time then). */
  | {
      readonly kind: 'recorded';
      readonly session: string;
      readonly recording: IRecordingAbout | null;
      readonly partial: boolean;
    }
  | { readonly kind: 'failed'; readonly reason: string }
  | { readonly kind: 'partial'; readonly elapsedMs: number };

/** Leak finder state for the panel's notebook. */
export class LeakFinderModel implements IDisposable {
  /**
   * @param worker runs the ranking; without one it runs in-process (tests),
   *   through the same calls.
   * @param trans words the findings' names of runs (`Cell [3] in kernel 2`); English when absent.
   */
  constructor(panel: IDiffPanel.IModel, worker?: IEngineWorker, trans?: TranslationBundle) {
    this._panel = panel;
    this._worker = worker ?? new EngineWorker();
    this._trans = trans ?? nullTranslator.load('jupyterlab_cuda_memdiff');
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

  /** True while the cells are being ranked or the kernel is being asked. */
  get running(): boolean {
    return this._running;
  }

  /** Cells the notebook ran since the findings were asked for, which they do not rank; 0 without findings. */
  get runsSince(): number {
    return this._findings ? Private.runsSince(this._records(), this._ranked) : 0;
  }

  /**
   * Rank the followed notebook's cells: `findings` resolves with the ranking
   * from the snapshots alone, `refined` once the kernel's holders are in
   * (both null when there is nothing to rank or a newer run replaced this one).
   */
  run(): { findings: Promise<ILeakFindings | null>; refined: Promise<ILeakFindings | null> } {
    const notebook = this._panel.notebook;
    const records = this._records();
    this._findings = null;
    this._error = null;
    const run = ++this._run;
    if (!notebook || !records.length) {
      this._running = false;
      this._error = Private.problem(notebook);
      this._changed.emit();
      return { findings: Promise.resolve(null), refined: Promise.resolve(null) };
    }
    this._running = true;
    this._notebook = notebook;
    this._kernelSession = notebook.store.kernelSession;
    this._ranked = new Set(records);
    this._runsSince = 0;
    this._changed.emit();
    const session = this._session(notebook.store, records);
    const ask = notebook.requestHolders;
    let queries: readonly BlockQuery[] = [];
    const findings = this._rank(run, session, undefined, ask ? Private.MAX_QUERIES : 0).then(result => {
      if (run !== this._run) {
        return null;
      }
      queries = result.queries;
      this._findings = this._entries(
        result.report,
        session,
        ask ? 'pending' : 'guessed',
        ask ? null : { kind: 'no-kernel' }
      );
      this._running = !!ask;
      this._changed.emit();
      return this._findings;
    });
    const refined = findings.then(first =>
      !first || !ask
        ? first
        : ask.call(notebook, queries).then(
            answer => this._refine(run, session, answer),
            reason => this._refine(run, session, null, (reason as Error).message)
          )
    );
    // A ranking that failed says why instead of waiting forever.
    findings.catch(reason => this._fail(run, reason));
    return { findings, refined };
  }

  /** Forget the findings. */
  clear(): void {
    this._run++;
    this._runsSince = 0;
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

  /** Rank in the worker: the first time with the encoded snapshots, again (with holders) by the session's key. */
  private async _rank(
    run: number,
    session: Private.ISession,
    holders?: IHolderAnswer['holders'],
    queries = 0
  ): Promise<IRankLeaksResult> {
    // Answers an earlier run got right after its latest cell name what held memory a later cell freed.
    const holdersAfter = session.records.map(r => session.store.holdersOf(r)?.holders ?? null);
    const request = { key: session.key, executions: session.executions, holders, holdersAfter, queries };
    if (holders) {
      try {
        return await this._worker.call('rankLeaks', request);
      } catch {
        // The worker no longer keeps the session (it restarted): send it again.
      }
    }
    const encoded = await Private.encode(session.snapshots);
    // Each snapshot's per-block roles, one byte a block: the leak reasons say what leaked memory is for.
    const roles = session.records.map(r => {
      const blocks = this._panel.notebook?.store.blockRolesOf(r) ?? null;
      return blocks ? roleCodes(r.snapshot, blocks) : null;
    });
    const buffers = [...sessionBuffers(encoded), ...roles.flatMap(c => (c ? [c.buffer as ArrayBuffer] : []))];
    return this._worker.call('rankLeaks', { ...request, session: encoded, roles }, buffers);
  }

  private _fail(run: number, reason: unknown): void {
    if (run !== this._run) {
      return;
    }
    this._running = false;
    this._findings = null;
    this._error = 'failed';
    this._errorMessage = reason instanceof Error ? reason.message : String(reason);
    this._changed.emit();
  }

  /** Why the last ranking failed, when `error` is `failed`. */
  get errorMessage(): string {
    return this._errorMessage;
  }

  private async _refine(
    run: number,
    session: Private.ISession,
    answer: IHolderAnswer | null,
    failure?: string
  ): Promise<ILeakFindings | null> {
    if (run !== this._run) {
      return this._findings;
    }
    let note: HoldersNote | null;
    // What the replayed recording says of itself (its GPU), where the helper speaks of the one answering.
    const helper = session.store.helper;
    const recording = (folder: string) => (helper.replay === folder ? (helper.recording ?? null) : null);
    if (!answer || answer.error || (answer.replay !== null && !answer.holders.size)) {
      note = answer?.replay
        ? { kind: 'replay', session: answer.replay, recording: recording(answer.replay) }
        : { kind: 'failed', reason: String(failure ?? answer?.error) };
      this._running = false;
      this._findings = { ...this._findings!, holders: 'guessed', holdersNote: note };
    } else {
      note =
        answer.replay !== null
          ? { kind: 'recorded', session: answer.replay, recording: recording(answer.replay), partial: answer.partial }
          : answer.partial
            ? { kind: 'partial', elapsedMs: Math.round(answer.elapsedMs) }
            : null;
      // The worker keeps the session: the second ranking sends only the holders.
      let report: LeakReport;
      try {
        report = (await this._rank(run, session, answer.holders)).report;
      } catch (reason) {
        this._fail(run, reason);
        return null;
      }
      if (run !== this._run) {
        return this._findings;
      }
      // Kept in the store: later rankings read it, and the export writes it beside the cell.
      session.store.keepHolders(session.records[session.records.length - 1], answer);
      this._running = false;
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

  /** What both rankings of a run share: executions, snapshots, cell positions. */
  private _session(store: ISnapshotStore, records: readonly CellRecord[]): Private.ISession {
    const cells = this._panel.notebook?.cells() ?? [];
    const cellIndex = records.map(r => cells.findIndex(c => c.id === r.cellId));
    // Named as the chart and the stack frames name runs: `[3]`, `[3] in kernel 2` once the session restarted.
    const all = this._panel.records;
    const names = runNames(all);
    const runs = records.map(r => runTagText(names[all.indexOf(r)], this._trans));
    const labels = runs.map((run, k) => cellNameText(run, cellIndex[k] < 0, this._trans));
    const executions = records.map((r, k) => ({
      cellId: r.cellId ?? `execution ${k}`,
      executionCount: r.executionCount,
      // The code the run ran: a cell fixed since reads otherwise, and its lines have moved.
      source: r.source ?? (cellIndex[k] >= 0 ? cells[cellIndex[k]].source : null),
      error: r.error
    }));
    const earlierRuns = records.map((r, k) => {
      const cell = cellIndex[k] >= 0 ? cells[cellIndex[k]] : null;
      // Only the current kernel's runs are ranked: a prompt with the run's own count shows that run.
      if (!cell || cell.prompt === undefined || cell.prompt === r.executionCount) {
        return null;
      }
      return {
        run: runs[k],
        prompt: cell.prompt,
        headline: sourceHeadline(cell.source),
        position: cell.position ?? null
      };
    });
    const snapshots = records.map(r => r.snapshot);
    return { key: this._run, store, records, executions, labels, snapshots, cellIndex, earlierRuns };
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
      label: session.labels[k],
      earlierRun: session.earlierRuns[k]
    }));
    const top = report.topLeak === null ? null : (entries.find(e => e.verdict.execution === report.topLeak) ?? null);
    return {
      entries,
      top,
      labels: session.labels,
      holders,
      holdersNote,
      noStacks: report.noStacks
    };
  }

  private _onPanelChanged(): void {
    // Findings belong to one notebook and one kernel of it: following another notebook drops them, and so
    // does a restart or kernel change (the memory they are about, and its holders, are gone).
    const notebook = this._panel.notebook;
    const moved = this._notebook !== notebook || notebook?.store.kernelSession !== this._kernelSession;
    if ((this._findings || this._running || this._error) && moved) {
      this.clear();
    } else {
      // A cell ran after the findings were asked for: they stay, and the view says they leave it out.
      const since = this.runsSince;
      if (since !== this._runsSince) {
        this._runsSince = since;
        this._changed.emit();
      }
    }
    this._notebook = notebook;
  }

  private readonly _panel: IDiffPanel.IModel;
  private readonly _worker: IEngineWorker;
  private readonly _trans: TranslationBundle;
  private _errorMessage = '';
  private _isDisposed = false;
  private _notebook = null as IDiffPanel.IModel['notebook'];
  /** The followed notebook's kernel session when the findings were asked for. */
  private _kernelSession: number | null = null;
  /** The records the findings rank, and how many cells ran since, as last said. */
  private _ranked = new Set<CellRecord>();
  private _runsSince = 0;
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
  export type Problem =
    'no-notebook' | 'not-python' | 'no-torch' | 'no-cuda' | 'capture-off' | 'no-snapshots' | 'failed';
}

namespace Private {
  /** Cells run (not OOM captures) among `records` that the findings did not rank. */
  export function runsSince(records: readonly CellRecord[], ranked: ReadonlySet<CellRecord>): number {
    return records.filter(r => r.reason === 'cell' && !ranked.has(r)).length;
  }

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
    /** The run it belongs to: the worker keeps its snapshots under this key. */
    readonly key: number;
    /** The notebook's store: it keeps the kernel's answers for later rankings and the export. */
    readonly store: ISnapshotStore;
    readonly records: readonly CellRecord[];
    readonly executions: readonly ILeakExecution[];
    /** How the findings name each execution (`Cell [3]`, `Cell [3] in kernel 2`), in the user's language. */
    readonly labels: readonly string[];
    readonly snapshots: readonly Snapshot[];
    /** Position of each record's cell in the notebook, -1 when it is gone. */
    readonly cellIndex: readonly number[];
    /** For each record, how to find its cell where the prompt no longer shows the run. */
    readonly earlierRuns: readonly (ILeakEntry.IEarlierRun | null)[];
  }

  /**
   * Blocks encoded per main-thread task: a few ms of copying,
   * so encoding a long session never makes one long task.
   */
  const ENCODE_SLICE_BLOCKS = 20000;

  /** The snapshots as typed arrays for the worker, a slice of blocks per task. */
  export async function encode(snapshots: readonly Snapshot[]): Promise<IEncodedSession> {
    const encoded: IEncodedSnapshot[] = [];
    let since = 0;
    for (const snapshot of snapshots) {
      if (since > 0 && since + snapshot.blocks.length > ENCODE_SLICE_BLOCKS) {
        await new Promise(resolve => setTimeout(resolve, 0));
        since = 0;
      }
      encoded.push(encodeSnapshot(snapshot));
      since += snapshot.blocks.length;
    }
    // The table last: it only grows, so it covers every stack of the snapshots.
    return { ...encodeFrames(snapshots[0].frames), snapshots: encoded };
  }

  /** Most blocks asked about in one request: the largest first (the worker picks them). */
  export const MAX_QUERIES = 20000;
}
