// The badge tooltip's roles: from the H200 recording of a training notebook, through the store.
import * as fs from 'fs';
import * as path from 'path';
import { diffSnapshots, formatBytes, readSnapshot } from '../../engine';
import { replayedStore } from '../../capture/__tests__/replay';
import { SnapshotStore } from '../../capture/store';
import { badgeView } from '../view';
import { roleLines } from '../roles';

const REC = path.resolve(__dirname, '../../../test-data/roles/training_roles--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

function replay(cells: number[], roles: (k: number) => unknown = k => manifest.cells[k].roles) {
  const store = new SnapshotStore();
  cells.forEach((k, i) => {
    const c = manifest.cells[k];
    store.add({
      cellId: `c${k}`,
      executionCount: k + 1,
      reason: 'cell',
      seq: i + 1,
      before: [{ device: 0, allocated: c.before.allocated, reserved: c.before.reserved }],
      snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, c.snapshot_file))), store.frames),
      devices: [
        {
          device: 0,
          allocated: c.after.allocated,
          reserved: c.after.reserved,
          peak_allocated: c.after.max_allocated,
          peak_reserved: c.after.max_reserved,
          device_free: null,
          device_total: null
        }
      ],
      error: null,
      replay: null,
      roles: roles(k)
    });
  });
  return store;
}

describe('roles in the badge tooltip', () => {
  it("breaks the cell's net change down by role, largest first, and says what stays", () => {
    const store = replay([0, 1, 2, 3, 4]);
    const training = store.latestForCell('c3')!;
    // the training steps: AdamW's two moments, the gradients, cuBLAS's workspaces, the loss
    expect(roleLines(training)[0]).toBe(
      'By role: +65.0 MiB workspace, +10.1 MiB optimizer state, +5.06 MiB gradient, +512 B user.'
    );
    const sum = Object.values(training.roleNetBytes!).reduce((n, v) => n + v, 0);
    expect(sum).toBe(training.netBytes);
    const evalPass = badgeView(store.latestForCell('c4')!, { oom: false, currentKernelSession: 0 });
    expect(evalPass.description).toContain('By role: +8.51 MiB activation, -492 KiB user.');
    expect(evalPass.description).toContain(
      'After it: 65.0 MiB workspace, 10.1 MiB optimizer state, 8.51 MiB activation, 5.06 MiB parameter, 5.06 MiB gradient'
    );
  });

  it('counts the first cell of a kernel session from nothing', () => {
    const store = replay([1]);
    expect(roleLines(store.records[0])[0]).toBe('By role: +5.06 MiB parameter, +8.50 KiB buffer.');
  });

  it('says nothing of roles the kernel did not send, and marks a partial pass', () => {
    const none = replay([0, 1], () => undefined);
    expect(roleLines(none.records[1])).toEqual([]);
    expect(badgeView(none.records[1], { oom: false, currentKernelSession: 0 }).description).not.toContain('role');
    const partial = replay([1], k => ({ ...manifest.cells[k].roles, partial: true }));
    expect(roleLines(partial.records[0])).toContain(
      'Roles are partial: the kernel ran out of time and called what it did not reach unknown.'
    );
    // a malformed roles field drops the roles, never the snapshot
    const bad = replay([1], () => ({ bytes: { weights: 1 } }));
    expect(bad.records).toHaveLength(1);
    expect(bad.records[0].roles).toBeNull();
  });
});

describe('roles in the badge tooltip of the demo, as the helper sends them', () => {
  it('say which blocks allocated earlier changed role, which the diff by role leaves out', () => {
    // The kernel helper's real messages replaying the demo recorded on an H200: the badge said +288 MiB
    // activation and the diff by role +256 MiB activation, +32.0 MiB user, and nothing on screen said why.
    const store = replayedStore('gpu_memory_demo--holders', 'live');
    const [, batches, preds] = store.records;
    const moved = diffSnapshots(store.records[0].snapshot, batches.snapshot).born;
    const line = `Of it, blocks allocated earlier changed role: ${formatBytes(moved.reduce((n, b) => n + b.size, 0))} from user to activation (the diff by role counts only blocks born and freed).`;
    const view = badgeView(preds, { oom: false, currentKernelSession: 0, roleMoves: store.roleMovesOf(preds) });
    expect(view.description).toContain(`By role: +288 MiB activation, +33.0 MiB workspace.\n${line}`);
    // a cell whose blocks kept their roles says nothing of it
    expect(store.roleMovesOf(batches)).toEqual([]);
    expect(roleLines(batches, store.roleMovesOf(batches)).join('\n')).not.toContain('changed role');
  });
});
