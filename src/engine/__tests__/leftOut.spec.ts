// Cells left out of a session because their snapshot could not be read: the
// next cell of the same kernel counts their change, and the stacks say what of
// it they made. Real H200 recordings, one file made unreadable.
import * as fs from 'fs';
import * as path from 'path';
import { Block, isAllocated, leftOutShares, loadSession, SnapshotError } from '..';
import { readBytes, TEST_DATA } from './data';

const MiB = 2 ** 20;

/** The gpu_memory_demo recording with some cells' files unreadable and its manifest changed by `change`. */
function session(unreadable: readonly string[], change: (cells: { kernel_session?: number }[]) => void = () => {}) {
  const dir = path.join(TEST_DATA, 'recordings', 'gpu_memory_demo--python');
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
  change(manifest.cells);
  return loadSession(JSON.stringify(manifest), name => {
    if (unreadable.includes(name)) {
      throw new SnapshotError('unreadable');
    }
    return readBytes(path.join(dir, name));
  });
}

describe('cells left out of a session', () => {
  it('give the next cell of their kernel their change, and none to a cell after a restart', () => {
    expect(session([]).leftOutBefore).toEqual([[], [], [], []]);
    const s = session(['cell01.pickle.gz', 'cell02.pickle.gz']);
    expect(s.manifest.cells.map(c => c.index)).toEqual([0, 3]);
    expect(s.leftOutBefore).toEqual([[], [1, 2]]);
    expect(s.positions).toEqual([0, 3]);
    // The kernel restarted before cell 2: cell 1 went with the first kernel, cell 2 is the second's.
    const restarted = session(['cell01.pickle.gz', 'cell02.pickle.gz'], cells => {
      cells[0].kernel_session = 1;
      cells[2].kernel_session = 2;
    });
    expect(restarted.leftOutBefore).toEqual([[], [2]]);
  });

  it('are named by the stacks of memory made while they ran', () => {
    // Cell 2 [3] of the demo keeps activations (`preds.append(model(b))`), cell 3 [4] outputs under no_grad.
    // Which cell made each block alive after cell 3, from the whole session's snapshots: the first that has it.
    const whole = session([]).snapshots;
    const key = (b: Block) => `${b.device}:${b.address}:${b.size}`;
    const alive = (k: number) => new Set(whole[k].blocks.filter(isAllocated).map(key));
    const [after1, after2] = [alive(1), alive(2)];
    const end = whole[3].blocks.filter(isAllocated);
    const sum = (blocks: Block[]) => blocks.reduce((n, b) => n + b.size, 0);
    const made2 = sum(end.filter(b => after2.has(key(b)) && !after1.has(key(b))));
    const made3 = sum(end.filter(b => !after2.has(key(b))));
    expect(made2).toBeGreaterThan(288 * MiB);
    expect(made3).toBeGreaterThan(0);

    const s = session(['cell02.pickle.gz']);
    const was = new Set(s.snapshots[1].blocks.filter(isAllocated).map(key));
    const born = s.snapshots[2].blocks.filter(b => isAllocated(b) && !was.has(key(b)));
    expect(sum(born)).toBe(made2 + made3);
    const parts = born.map(b => ({ stack: b.stack, bytes: b.size }));
    expect(leftOutShares(s, 2, parts)).toEqual([{ position: 2, bytes: made2 }]);
  });
});
