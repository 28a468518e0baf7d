import * as fs from 'fs';
import * as path from 'path';
import { readSnapshot, Snapshot } from '../../engine';
import { SnapshotStore } from '../store';
import { runsOf } from '../../engine/__tests__/roleRuns';

const REC = path.resolve(__dirname, '../../../test-data/recordings/eval_without_no_grad--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

function recorded(store: SnapshotStore, k: number): Snapshot {
  return readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[k].snapshot_file))), store.frames);
}

let seq = 0;

function add(
  store: SnapshotStore,
  k: number,
  cellId = `c${k}`,
  reason: 'cell' | 'oom' = 'cell',
  at = ++seq,
  source: string | null = manifest.cells[k].source
) {
  const after = manifest.cells[k].after;
  const before = manifest.cells[k].before;
  return store.add({
    cellId,
    executionCount: k + 1,
    reason,
    seq: at,
    before: [{ device: 0, allocated: before.allocated, reserved: before.reserved }],
    snapshot: recorded(store, k),
    devices: [
      {
        device: 0,
        allocated: after.allocated,
        reserved: after.reserved,
        peak_allocated: after.max_allocated,
        peak_reserved: after.max_reserved,
        device_free: after.device_free,
        device_total: after.device_total
      }
    ],
    error: null,
    source,
    replay: null
  });
}

describe('SnapshotStore', () => {
  it("nets each cell against the kernel's own figures at its start", () => {
    const store = new SnapshotStore();
    manifest.cells.forEach((_: unknown, k: number) => add(store, k));
    store.records.forEach((r, k) => {
      expect(r.netBytes).toBe(manifest.cells[k].after.allocated - manifest.cells[k].before.allocated);
      expect(r.peakBytes).toBe(manifest.cells[k].after.max_allocated);
    });
    expect(store.latestForCell('c2')!.executionCount).toBe(3);
    expect(store.sessionPeakBytes).toBe(Math.max(...manifest.cells.map((c: any) => c.after.max_allocated)));
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

  it('keeps the code each run ran as long as its record, after the cell is edited and run again', () => {
    const store = new SnapshotStore({ maxRecords: 3 });
    add(store, 2, 'preds');
    add(store, 3, 'scores');
    add(
      store,
      2,
      'preds',
      'cell',
      ++seq,
      'preds = []\nwith torch.no_grad():\n    preds.extend(model(b) for b in batches)'
    );
    expect(store.records.map(r => r.source)).toEqual([
      manifest.cells[2].source,
      manifest.cells[3].source,
      'preds = []\nwith torch.no_grad():\n    preds.extend(model(b) for b in batches)'
    ]);
    // The first run's code goes with its record; a message without code (an older helper) keeps none.
    add(store, 4, 'later', 'cell', ++seq, null);
    expect(store.records.map(r => r.source)).toEqual([
      manifest.cells[3].source,
      'preds = []\nwith torch.no_grad():\n    preds.extend(model(b) for b in batches)',
      null
    ]);
  });

  it('nets a cell correctly although the snapshot before it never arrived', () => {
    const store = new SnapshotStore();
    add(store, 0);
    const third = add(store, 2); // cell 1's message was lost
    expect(third!.netBytes).toBe(manifest.cells[2].after.allocated - manifest.cells[2].before.allocated);
  });

  it('keeps one record per snapshot when a frontend is sent the kept ones again', () => {
    const store = new SnapshotStore();
    store.setRun('run-a');
    add(store, 0, 'c0', 'cell', 1);
    add(store, 1, 'c1', 'cell', 2);
    expect(add(store, 0, 'c0', 'cell', 1)).toBeUndefined();
    expect(add(store, 1, 'c1', 'cell', 2)).toBeUndefined();
    expect(store.records).toHaveLength(2);
    store.setRun('run-b'); // the kernel process changed under us (a restart made elsewhere)
    expect(add(store, 0, 'c0', 'cell', 1)!.kernelSession).toBe(1);
  });

  it('starts a new kernel session and marks the OOM run', () => {
    const store = new SnapshotStore();
    add(store, 0);
    store.newKernelSession();
    expect(store.helper.status).toBe('starting');
    const again = add(store, 0, 'c0', 'cell', 1)!;
    expect(again.kernelSession).toBe(1);
    expect(store.hadOom(again)).toBe(false);
    add(store, 0, 'c0', 'oom', 2);
    expect(store.hadOom(again)).toBe(true);
    expect(store.latestForCell('c0')).toBe(again);
  });

  it('notes why a cell has no snapshot, until one arrives', () => {
    const store = new SnapshotStore();
    store.addNote('c0', { note: 'not-recorded', message: 'not in the recording' });
    expect(store.noteForCell('c0')!.note).toBe('not-recorded');
    add(store, 0);
    expect(store.noteForCell('c0')).toBeUndefined();
  });

  it("shows a cell's earlier-kernel figures until the cell runs in the new kernel, and that run's once they come", () => {
    const store = new SnapshotStore();
    store.cellRan('c0');
    const first = add(store, 0)!;
    add(store, 1);
    expect(store.shownForCell('c0')).toBe(first); // ran and snapshotted in the same kernel
    store.newKernelSession();
    expect(store.shownForCell('c0')).toBe(first); // not run since the restart: the earlier kernel's, marked so
    let changes = 0;
    store.changed.connect(() => changes++);
    store.cellRan('c0');
    store.cellRan('c0'); // a second run in the same kernel session changes nothing more
    expect(changes).toBe(1);
    expect(store.shownForCell('c0')).toBeUndefined(); // ran in the new kernel, which said nothing of it
    expect(store.latestForCell('c0')).toBe(first); // the record itself stays
    expect(store.shownForCell('c1')!.executionCount).toBe(2);
    const again = add(store, 0, 'c0', 'cell', 1)!;
    expect(store.shownForCell('c0')).toBe(again);
  });
});

describe('per-block roles', () => {
  const ROLES_DIR = path.resolve(__dirname, '../../../test-data/roles/training_roles--python');
  const rolesManifest = JSON.parse(fs.readFileSync(path.join(ROLES_DIR, 'manifest.json'), 'utf-8'));

  function addWithRoles(store: SnapshotStore, k: number, blocks: unknown) {
    const cell = rolesManifest.cells[k];
    const snapshot = readSnapshot(
      new Uint8Array(fs.readFileSync(path.join(ROLES_DIR, cell.snapshot_file))),
      store.frames
    );
    return store.add({
      cellId: `c${k}`,
      executionCount: k + 1,
      reason: 'cell',
      seq: k + 1,
      snapshot,
      devices: [
        {
          device: 0,
          allocated: cell.after.allocated,
          reserved: cell.after.reserved,
          peak_allocated: cell.after.max_allocated,
          peak_reserved: cell.after.max_reserved,
          device_free: cell.after.device_free,
          device_total: cell.after.device_total
        }
      ],
      error: null,
      replay: 'training_roles--python',
      roles: { ...cell.roles, blocks }
    })!;
  }

  it("keeps each snapshot's block roles from its message, as the recording's roles file names them", () => {
    const store = new SnapshotStore();
    const file = JSON.parse(fs.readFileSync(path.join(ROLES_DIR, 'cell04.roles.json'), 'utf-8'));
    const record = addWithRoles(store, 4, runsOf(file));
    const roles = store.blockRolesOf(record)!;
    expect(roles.size).toBe(file.role.length);
    file.address.forEach((address: number, i: number) =>
      expect(roles.roleOf({ device: file.device[i], address })).toBe(file.role[i])
    );
    expect(store.blockRolesOf(record)).toBe(roles); // parsed once
  });

  it('keeps the snapshot and its bytes per role when the block roles do not fit it', () => {
    const store = new SnapshotStore();
    const record = addWithRoles(store, 4, { count: 3, runs: '3a' });
    expect(store.blockRolesOf(record)).toBeNull();
    expect(record.roles!.bytes.activation).toBe(rolesManifest.cells[4].roles.bytes.activation);
    const none = addWithRoles(store, 5, undefined);
    expect(store.blockRolesOf(none)).toBeNull();
  });
});
