/**
 * Runs named in the CLI's words. The engine gives each run as data (its
 * count, and its kernel where the session spans restarts; engine/runs.ts);
 * this is the one place the CLI words it. The panel words the same data
 * through its translator (components/runNames.ts).
 */
import { ISessionManifest, kernelsNamed, kernelSessionsOf, sessionCellName } from '../engine';

/** A run's name (`Cell [2]`, `step 4`) with its kernel where the session spans several: `Cell [2] in kernel 1`. */
export function inKernel(name: string, kernel: number | null): string {
  return kernel === null ? name : `${name} in kernel ${kernel}`;
}

/**
 * Each cell of a session folder as the leak finder's findings name it, by
 * position: `Cell [4]`, and `Cell [4] in kernel 2` once the session restarted
 * (the same cell and count then name several runs).
 */
export function executionLabels(manifest: ISessionManifest): string[] {
  const kernels = kernelsNamed(kernelSessionsOf(manifest));
  return manifest.cells.map((cell, k) =>
    inKernel(sessionCellName(cell.index, cell.execution_count, cell.label), kernels[k])
  );
}
