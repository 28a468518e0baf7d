/** A SnapshotStore filled from a recorded session folder, as the capture would fill it. */
import * as fs from 'fs';
import * as path from 'path';
import { SnapshotStore } from '../../capture/store';
import { ISessionManifest, readSnapshot } from '../../engine';

/** The folder's manifest and a store with one record per cell (the first `cells` of them), keyed `cell-<index>`. */
export function recordedStore(
  folder: string,
  cells?: number
): { manifest: ISessionManifest; store: SnapshotStore; addCell: (k: number) => void } {
  const manifest: ISessionManifest = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf-8'));
  const store = new SnapshotStore();
  // Add the record of cell k, as the capture does once the cell ran.
  const addCell = (k: number) => {
    const c = manifest.cells[k];
    store.add({
      cellId: `cell-${k}`,
      executionCount: c.execution_count,
      reason: 'cell',
      seq: k + 1,
      before: c.before ? [{ device: 0, allocated: c.before.allocated, reserved: c.before.reserved }] : undefined,
      snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(folder, c.snapshot_file))), store.frames),
      devices: [],
      error: c.error ?? null,
      source: c.source,
      replay: null
    });
  };
  manifest.cells.slice(0, cells ?? manifest.cells.length).forEach((_, k) => addCell(k));
  return { manifest, store, addCell };
}
