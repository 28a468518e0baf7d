/**
 * A cell's run in a session that spans kernel restarts, as data for the
 * views to name. Each kernel counts its executions from 1 again, so kernel
 * 1's [2] and kernel 2's [2] are told apart by their kernel; a session of one
 * kernel needs none. The engine gives each run's count and kernel number;
 * the views word them, the panel through its translator
 * (components/runNames.ts) and the CLI in its own words (cli/runNames.ts).
 */
import { ICellSource } from './cells';
import { kernelsInOrder } from './retention';

/** A cell's run as its name needs it. */
export interface ICellRun {
  /** The cell's id; null for a run whose cell is unknown. */
  readonly cellId: string | null;
  readonly executionCount: number | null;
  /** The kernel session it ran in; a change from one run to the next is a restart. */
  readonly kernelSession: number | null | undefined;
  /** The code it ran; null or absent where the kernel did not say. */
  readonly source?: string | null;
}

/** What a run's name is made of: the count its prompt showed, and its kernel where the session spans several. */
export interface IRunName {
  readonly executionCount: number | null;
  /** The run's kernel, numbered from 1 (see kernelNumbers); null in a session of one kernel. */
  readonly kernel: number | null;
}

/**
 * Each run's kernel numbered from 1 in the order the kernels ran (see
 * kernelsInOrder), or null for every run when they all ran in one kernel.
 */
export function kernelNumbers(ids: readonly (number | null | undefined)[]): (number | null)[] {
  return kernelsNamed(kernelsInOrder(ids));
}

/**
 * Kernel numbers already in order (kernelSessionsOf's) as runs name them:
 * null for every run where all ran in kernel 1.
 */
export function kernelsNamed(numbers: readonly number[]): (number | null)[] {
  const several = numbers.some(n => n > 1);
  return numbers.map(n => (several ? n : null));
}

/** Each run's count and kernel (see IRunName): the kernel is null for every run of a one-kernel session. */
export function runNames(runs: readonly ICellRun[]): IRunName[] {
  const kernels = kernelNumbers(runs.map(r => r.kernelSession));
  return runs.map((r, k) => ({ executionCount: r.executionCount, kernel: kernels[k] }));
}

/**
 * The cells as the frames of a snapshot from kernel session `kernelSession`
 * name them: each cell by its latest run in that kernel (the frames come from
 * that process's runs; a later kernel may have given the cell another count),
 * else by its latest run at all, with that run's kernel (`kernel`, see
 * kernelNumbers); a cell that never ran keeps no count. Where the runs say
 * what code they ran, only runs of the cell's code as it reads now count,
 * while there are any: an earlier run of other code is named by editedRuns.
 * `runs` come in execution order.
 */
export function cellsAsRun(
  cells: readonly ICellSource[],
  runs: readonly ICellRun[],
  kernelSession: number | null
): ICellSource[] {
  const kernels = kernelNumbers(runs.map(r => r.kernelSession));
  const sources = new Map(cells.map(c => [c.id, c.source]));
  const latest = new Private.LatestRuns<string>(kernelSession);
  const ofThisCode = new Private.LatestRuns<string>(kernelSession);
  runs.forEach((r, k) => {
    if (r.cellId !== null) {
      latest.add(r.cellId, r, k);
      if (r.source === null || r.source === undefined || r.source === sources.get(r.cellId)) {
        ofThisCode.add(r.cellId, r, k);
      }
    }
  });
  return cells.map(cell => {
    const k = ofThisCode.pick(cell.id) ?? latest.pick(cell.id);
    return k === undefined
      ? { ...cell, executionCount: null, kernel: null }
      : { ...cell, executionCount: runs[k].executionCount, kernel: kernels[k] };
  });
}

/**
 * The code cells ran that differs from their text now (they were edited
 * since), once per cell and code: the cell (its `source` as it reads now)
 * with that code as `sourceAsRun`, named by its latest run of that code in
 * kernel session `kernelSession`, else its latest run of it at all (as
 * cellsAsRun names cells). Runs of a cell no longer in `cells` (see
 * deletedRuns), and runs that do not say their code, are left out. `runs`
 * come in execution order.
 */
export function editedRuns(
  cells: readonly ICellSource[],
  runs: readonly ICellRun[],
  kernelSession: number | null
): ICellSource[] {
  const byId = new Map(cells.map(c => [c.id, c]));
  return Private.runsByCode(runs, kernelSession, (cellId, source) => {
    const cell = byId.get(cellId);
    return cell !== undefined && source !== cell.source;
  }).map(({ cellId, source, executionCount, kernel }) => ({
    ...byId.get(cellId)!,
    sourceAsRun: source,
    executionCount,
    kernel
  }));
}

/**
 * The code cells no longer in `cells` ran (they were deleted since), once
 * per cell and code: a cell marked `deleted` whose `source` is that code,
 * named by its latest run of it as editedRuns names runs, so a frame of it
 * says which run of which gone cell made it. Runs that do not say their code
 * are left out: nothing tells their frames apart. `runs` come in execution order.
 */
export function deletedRuns(
  cells: readonly ICellSource[],
  runs: readonly ICellRun[],
  kernelSession: number | null
): ICellSource[] {
  const ids = new Set(cells.map(c => c.id));
  return Private.runsByCode(runs, kernelSession, cellId => !ids.has(cellId)).map(
    ({ cellId, source, executionCount, kernel }) => ({ id: cellId, source, executionCount, kernel, deleted: true })
  );
}

/**
 * The code runs ran that the notebook's cells no longer read, as
 * CellCodeNames takes it (`earlier`): each edited cell's earlier code (see
 * editedRuns), then each deleted cell's (see deletedRuns).
 */
export function earlierRuns(
  cells: readonly ICellSource[],
  runs: readonly ICellRun[],
  kernelSession: number | null
): ICellSource[] {
  return [...editedRuns(cells, runs, kernelSession), ...deletedRuns(cells, runs, kernelSession)];
}

namespace Private {
  /** A cell's code as its latest run of it names it (see runsByCode). */
  export interface IRunOfCode {
    readonly cellId: string;
    readonly source: string;
    readonly executionCount: number | null;
    readonly kernel: number | null;
  }

  /**
   * Once per cell and code that `keep` lets through, in order of first run:
   * its latest run in kernel session `kernelSession`, else its latest at all.
   * Runs without a cell or without their code are skipped.
   */
  export function runsByCode(
    runs: readonly ICellRun[],
    kernelSession: number | null,
    keep: (cellId: string, source: string) => boolean
  ): IRunOfCode[] {
    const kernels = kernelNumbers(runs.map(r => r.kernelSession));
    // Keyed by cell and code: one entry per code a cell ran.
    const latest = new LatestRuns<string>(kernelSession);
    const keys: { cellId: string; source: string; key: string }[] = [];
    runs.forEach((r, k) => {
      if (r.cellId === null || r.source === null || r.source === undefined || !keep(r.cellId, r.source)) {
        return;
      }
      const key = `${r.cellId}\u0000${r.source}`;
      if (!latest.has(key)) {
        keys.push({ cellId: r.cellId, source: r.source, key });
      }
      latest.add(key, r, k);
    });
    return keys.map(({ cellId, source, key }) => {
      const k = latest.pick(key)!;
      return { cellId, source, executionCount: runs[k].executionCount, kernel: kernels[k] };
    });
  }

  /** The latest run per key, in one kernel session and in all. */
  export class LatestRuns<K> {
    constructor(private readonly _kernelSession: number | null) {}

    /** Note run number `k` (runs come in execution order). */
    add(key: K, run: ICellRun, k: number): void {
      this._latest.set(key, k);
      if (run.kernelSession === this._kernelSession) {
        this._inKernel.set(key, k);
      }
    }

    has(key: K): boolean {
      return this._latest.has(key);
    }

    /** The latest run in the kernel session, else the latest at all. */
    pick(key: K): number | undefined {
      return this._inKernel.get(key) ?? this._latest.get(key);
    }

    private readonly _latest = new Map<K, number>();
    private readonly _inKernel = new Map<K, number>();
  }
}
