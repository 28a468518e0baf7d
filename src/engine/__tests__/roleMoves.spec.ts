/**
 * @jest-environment node
 */
// A cell's change by role (its badge) and the diff by role (the panel) disagree where blocks allocated
// earlier changed role: on the demo recorded on an H200, the forward pass saves `batches` for backward.
import * as path from 'path';
import { diffSnapshots, groupByRole, roleChange, roleMoves, ROLES, sessionRoles } from '..';
import { LIVE, readBytes, sessionOf } from './data';

const NAME = 'gpu_memory_demo--holders';

describe('blocks that changed role between two snapshots', () => {
  const demo = sessionOf(NAME, LIVE);
  const roles = sessionRoles(demo.manifest, f => readBytes(path.join(LIVE, NAME, f)));

  it('account for the difference between the badge’s change by role and the diff by role, in every cell', () => {
    for (let k = 1; k < demo.snapshots.length; k++) {
      const diff = diffSnapshots(demo.snapshots[k - 1], demo.snapshots[k]);
      const before = roles[k - 1]!.blocks!;
      const after = roles[k]!.blocks!;
      const groups = groupByRole(diff, before, after);
      const moves = roleMoves(diff, demo.snapshots[k], before, after);
      // What the badge says: the recording's bytes per role after each cell, as the manifest keeps them.
      const badge = roleChange(roles[k - 1]!.bytes, roles[k]!.bytes);
      for (const role of ROLES) {
        const inDiff = groups.find(g => g.role === role)?.netBytes ?? 0;
        const moved = moves.reduce((n, m) => n + (m.to === role ? m.bytes : 0) - (m.from === role ? m.bytes : 0), 0);
        expect([k, role, inDiff + moved]).toEqual([k, role, badge[role]]);
      }
    }
  });

  it('name the inputs the graph of `preds` saved: from user to activation', () => {
    const k = (demo.manifest.expected as { top_leak_cell: number }).top_leak_cell;
    const diff = diffSnapshots(demo.snapshots[k - 1], demo.snapshots[k]);
    const moves = roleMoves(diff, demo.snapshots[k], roles[k - 1]!.blocks!, roles[k]!.blocks!);
    // `batches`: the blocks the cell before made, all of them.
    const batches = diffSnapshots(demo.snapshots[k - 2], demo.snapshots[k - 1]).born;
    expect(moves).toEqual([
      { from: 'user', to: 'activation', bytes: batches.reduce((n, b) => n + b.size, 0), count: batches.length }
    ]);
  });
});
