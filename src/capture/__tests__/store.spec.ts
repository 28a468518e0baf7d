import * as fs from 'fs';
import * as path from 'path';
import { readSnapshot, Snapshot } from '../../engine';
import { SnapshotStore } from '../store';

const REC = path.resolve(__dirname, '../../../test-data/recordings/eval_without_no_grad--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

function recorded(store: SnapshotStore, k: number): Snapshot {
  return readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[k].snapshot_file))), store.frames);
}

function add(store: SnapshotStore, k: number, cellId = `c${k}`, reason: 'cell' | 'oom' = 'cell') {
  const after = manifest.cells[k].after;
  return store.add({
    cellId,
    executionCount: k + 1,
    reason,
    snapshot: recorded(store, k),
    devices: [{ device: 0, allocated: after.allocated, reserved: after.reserved, peak_allocated: after.max_allocated, peak_reserved: after.max_reserved, device_free: after.device_free, device_total: after.device_total }],
    error: null,
    replay: null
  });
}

describe('SnapshotStore', () => {
  it('nets each cell against the previous cell of the same kernel session', () => {
    const store = new SnapshotStore();
    manifest.cells.forEach((_: unknown, k: number) => add(store, k));
    store.records.forEach((r, k) => {
      expect(r.netBytes).toBe(manifest.cells[k].after.allocated - manifest.cells[k].before.allocated);
      expect(r.peakBytes).toBe(manifest.cells[k].after.max_allocated);
    });
    expect(store.latestForCell('c2')!.executionCount).toBe(3);
  });

  it('keys by cell id and returns the latest run of a cell', () => {
    const store = new SnapshotStore();
    add(store, 0, 'a');
    add(store, 1, 'b');
    add(store, 2, 'a');
    expect(store.latestForCell('a')!.executionCount).toBe(3);
    expect(store.latestForCell('zzz')).toBeUndefined();
  });

  it('drops the oldest records beyond its bound and counts them', () => {
    const store = new SnapshotStore({ maxRecords: 2 });
    let changes = 0;
    store.changed.connect(() => changes++);
    [0, 1, 2, 3].forEach(k => add(store, k));
    expect(store.records.map(r => r.executionCount)).toEqual([3, 4]);
    expect(store.droppedCount).toBe(2);
    expect(changes).toBe(4);
  });

  it('starts counting from zero in a new kernel session and marks the OOM run', () => {
    const store = new SnapshotStore();
    add(store, 0);
    store.newKernelSession();
    expect(store.helper.status).toBe('starting');
    const again = add(store, 0);
    expect(again.kernelSession).toBe(1);
    expect(again.netBytes).toBe(manifest.cells[0].after.allocated);
    expect(store.hadOom(again)).toBe(false);
    add(store, 0, 'c0', 'oom');
    expect(store.hadOom(again)).toBe(true);
    expect(store.latestForCell('c0')).toBe(again);
  });
});
