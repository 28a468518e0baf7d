/**
 * How a cell's run is named in a session that spans kernel restarts. Each
 * kernel counts its executions from 1 again, so kernel 1's Cell [2] and
 * kernel 2's Cell [2] are told apart by their kernel: `Cell [2] in kernel 1`.
 * A session of one kernel needs no kernel in its names. The panel, the
 * badges, the leak finder and the session's findings all name runs here.
 */
import { ICellSource, inKernel, runTag } from './cells';
import { kernelPositions } from './retention';

/** A cell's run as its name needs it. */
export interface ICellRun {
  /** The cell's id; null for a run whose cell is unknown. */
  readonly cellId: string | null;
  readonly executionCount: number | null;
  /** The kernel session it ran in; a change from one run to the next is a restart. */
  readonly kernelSession: number | null | undefined;
}

/**
 * Each run's kernel numbered from 1 in the order the kernels ran (see
 * kernelPositions), or null for every run when they all ran in one kernel.
 */
export function kernelNumbers(ids: readonly (number | null | undefined)[]): (number | null)[] {
  const positions = kernelPositions(ids);
  const several = positions.some(p => p > 0);
  return positions.map(p => (several ? p + 1 : null));
}

/** Each run's tag as labels show it: `[4]`, and `[4] in kernel 2` where the runs span kernels. */
export function runTags(runs: readonly ICellRun[]): string[] {
  const kernels = kernelNumbers(runs.map(r => r.kernelSession));
  return runs.map((r, k) => inKernel(runTag(r.executionCount), kernels[k]));
}

/**
 * The cells as the frames of a snapshot from kernel session `kernelSession`
 * name them: each cell by its latest run in that kernel (the frames come from
 * that process's runs; a later kernel may have given the cell another count),
 * else by its latest run at all, with that run's kernel (`kernel`, see
 * kernelNumbers); a cell that never ran keeps no count. `runs` come in
 * execution order.
 */
export function cellsAsRun(
  cells: readonly ICellSource[],
  runs: readonly ICellRun[],
  kernelSession: number | null
): ICellSource[] {
  const kernels = kernelNumbers(runs.map(r => r.kernelSession));
  const latest = new Map<string, number>();
  const inThisKernel = new Map<string, number>();
  runs.forEach((r, k) => {
    if (r.cellId !== null) {
      latest.set(r.cellId, k);
      if (r.kernelSession === kernelSession) {
        inThisKernel.set(r.cellId, k);
      }
    }
  });
  return cells.map(cell => {
    const k = inThisKernel.get(cell.id) ?? latest.get(cell.id);
    return k === undefined
      ? { ...cell, executionCount: null, kernel: null }
      : { ...cell, executionCount: runs[k].executionCount, kernel: kernels[k] };
  });
}
