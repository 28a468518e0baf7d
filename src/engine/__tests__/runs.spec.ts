// How runs are told apart across kernel restarts, as data: counts start again in each kernel, so a run carries
// its kernel once the session has several, and a cell in a frame is given its run in the frame's kernel. The
// views word it (components/__tests__/runNames.spec.ts, cli/__tests__/runNames.spec.ts).
import { cellsAsRun, cellTag, kernelNumbers, runNames, sessionExecutions } from '..';

describe('runs across restarts', () => {
  it('numbers kernels from 1 only where there are several', () => {
    expect(kernelNumbers([7, 7, 7])).toEqual([null, null, null]);
    expect(kernelNumbers([7, 7, 9, 9, 12])).toEqual([1, 1, 2, 2, 3]);
    // a missing id continues the kernel before it, as kernelPositions reads it
    expect(kernelNumbers([7, undefined, 9])).toEqual([1, 1, 2]);
  });

  it('gives a run its kernel once the session restarted', () => {
    const run = (executionCount: number | null, kernelSession: number) => ({
      cellId: 'a',
      executionCount,
      kernelSession
    });
    expect(runNames([run(1, 4), run(2, 4)])).toEqual([
      { executionCount: 1, kernel: null },
      { executionCount: 2, kernel: null }
    ]);
    expect(runNames([run(1, 4), run(2, 4), run(1, 5), run(null, 5)])).toEqual([
      { executionCount: 1, kernel: 1 },
      { executionCount: 2, kernel: 1 },
      { executionCount: 1, kernel: 2 },
      { executionCount: null, kernel: 2 }
    ]);
  });

  it('gives a cell its run in the kernel of the snapshot, else its latest run, else no count', () => {
    const cells = ['a', 'b', 'c'].map((id, k) => ({ id, source: id, position: { index: k + 1, total: 3 } }));
    // kernel 4: a [1], b [2]; kernel 5: b [1]
    const runs = [
      { cellId: 'a', executionCount: 1, kernelSession: 4 },
      { cellId: 'b', executionCount: 2, kernelSession: 4 },
      { cellId: 'b', executionCount: 1, kernelSession: 5 }
    ];
    const counted = (kernelSession: number, of = runs) =>
      cellsAsRun(cells, of, kernelSession).map(c => [c.executionCount, c.kernel]);
    expect(counted(4)).toEqual([
      [1, 1],
      [2, 1],
      [null, null]
    ]);
    expect(counted(5)).toEqual([
      [1, 1],
      [1, 2],
      [null, null]
    ]);
    // one kernel: no kernel, as before restarts existed
    expect(counted(4, runs.slice(0, 2))).toEqual([
      [1, null],
      [2, null],
      [null, null]
    ]);
  });

  it('tags a cell in notation only: the count or the place, never words', () => {
    expect(cellTag({ id: 'a', source: '', executionCount: 3, kernel: 2 })).toBe('[3]');
    expect(cellTag({ id: 'b', source: '', executionCount: null, kernel: null, position: { index: 3, total: 3 } })).toBe(
      '3/3'
    );
  });

  it("gives a session folder's executions their kernel sessions, and no words", () => {
    const cell = (index: number, count: number, kernel: number) => ({
      index,
      execution_count: count,
      kernel_session: kernel,
      source: '',
      snapshot_file: `${index}.pickle`
    });
    const manifest = { cells: [cell(0, 1, 1), cell(1, 1, 2)] } as unknown as Parameters<typeof sessionExecutions>[0];
    expect(sessionExecutions(manifest).map(e => [e.executionCount, e.kernelSession])).toEqual([
      [1, 1],
      [1, 2]
    ]);
    expect(sessionExecutions(manifest).some(e => 'label' in e)).toBe(false);
  });
});
