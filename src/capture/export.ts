/**
 * A notebook's captured cells as the export writes them (engine's
 * sessionFolderFiles): each cell's snapshot with the OOM snapshots of the
 * same execution, its place and code in the notebook, its peak and kernel.
 */
import { BlockRoles, IExportCell, IHolderAnswer } from '../engine';
import { CellRecord } from './store';

/** The cells of the notebook, in order, as the export needs them. */
export interface INotebookCell {
  readonly id: string;
  readonly source: string;
}

/**
 * One exported cell per cell execution the store holds (OOM snapshots go
 * with their execution); `holdersOf` gives the kernel's answer about who held
 * a record's blocks, where it was asked after that record, and `blockRolesOf`
 * what each block was for (the store's).
 */
export function exportCells(
  records: readonly CellRecord[],
  cells: readonly INotebookCell[],
  holdersOf: (record: CellRecord) => IHolderAnswer | null = () => null,
  blockRolesOf: (record: CellRecord) => BlockRoles | null = () => null
): IExportCell[] {
  return records
    .filter(r => r.reason === 'cell')
    .map(r => {
      const index = cells.findIndex(c => c.id === r.cellId);
      const answer = holdersOf(r);
      return {
        index,
        executionCount: r.executionCount,
        // The code the run ran, whose hash names its frames: a cell edited since reads otherwise.
        source: r.source ?? (index >= 0 ? cells[index].source : ''),
        cellId: r.cellId,
        error: r.error,
        snapshot: r.snapshot,
        oomSnapshots: records
          .filter(
            o =>
              o.reason === 'oom' &&
              o.cellId === r.cellId &&
              o.executionCount === r.executionCount &&
              // execution counts start again at 1 after a restart
              o.kernelSession === r.kernelSession
          )
          .map(o => o.snapshot),
        devices: r.devices,
        peak: { bytes: r.peakBytes, exact: r.peakExact },
        kernelSession: r.kernelSession,
        roles: r.roles,
        blockRoles: blockRolesOf(r),
        holders: answer ? { holders: answer.holders, partial: answer.partial } : null
      };
    });
}
