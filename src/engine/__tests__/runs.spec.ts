// How runs are named across kernel restarts: counts start again in each kernel, so a run's name carries its
// kernel once the session has several, and a cell in a frame is named by its run in the frame's kernel.
import { cellsAsRun, cellTag, kernelNumbers, runTags, sessionExecutions } from '..';

describe('run names across restarts', () => {
  it('numbers kernels from 1 only where there are several', () => {
    expect(kernelNumbers([7, 7, 7])).toEqual([null, null, null]);
    expect(kernelNumbers([7, 7, 9, 9, 12])).toEqual([1, 1, 2, 2, 3]);
    // a missing id continues the kernel before it, as kernelPositions reads it
    expect(kernelNumbers([7, undefined, 9])).toEqual([1, 1, 2]);
  });

  it('tags a run with its kernel once the session restarted', () => {
    const run = (executionCount: number | null, kernelSession: number) => ({
      cellId: 'a',
      executionCount,
      kernelSession
    });
    expect(runTags([run(1, 4), run(2, 4)])).toEqual(['[1]', '[2]']);
    expect(runTags([run(1, 4), run(2, 4), run(1, 5), run(null, 5)])).toEqual([
      '[1] in kernel 1',
      '[2] in kernel 1',
      '[1] in kernel 2',
      '[ ] in kernel 2'
    ]);
  });

  it('names a cell by its run in the kernel of the snapshot, else by its latest run, else by its place', () => {
    const cells = ['a', 'b', 'c'].map((id, k) => ({ id, source: id, position: { index: k + 1, total: 3 } }));
    // kernel 4: a [1], b [2]; kernel 5: b [1]
    const runs = [
      { cellId: 'a', executionCount: 1, kernelSession: 4 },
      { cellId: 'b', executionCount: 2, kernelSession: 4 },
      { cellId: 'b', executionCount: 1, kernelSession: 5 }
    ];
    expect(cellsAsRun(cells, runs, 4).map(cellTag)).toEqual(['[1] in kernel 1', '[2] in kernel 1', '3/3']);
    expect(cellsAsRun(cells, runs, 5).map(cellTag)).toEqual(['[1] in kernel 1', '[1] in kernel 2', '3/3']);
    // one kernel: names as before restarts existed
    expect(cellsAsRun(cells, runs.slice(0, 2), 4).map(cellTag)).toEqual(['[1]', '[2]', '3/3']);
  });

  it("names a session folder's cells by the same rule", () => {
    const cell = (index: number, count: number, kernel: number) => ({
      index,
      execution_count: count,
      kernel_session: kernel,
      source: '',
      snapshot_file: `${index}.pickle`
    });
    const manifest = { cells: [cell(0, 1, 1), cell(1, 1, 2)] } as unknown as Parameters<typeof sessionExecutions>[0];
    expect(sessionExecutions(manifest).map(e => e.label)).toEqual(['Cell [1] in kernel 1', 'Cell [1] in kernel 2']);
  });
});
