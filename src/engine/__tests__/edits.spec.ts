/**
 * @jest-environment node
 */
// A frame's line after its cell was edited or deleted: the facts (edited, deleted, the line as run, where that
// code is now) that let the panel keep an earlier run's frame a link, or say its cell is gone.
import {
  Block,
  CellCodeNames,
  cellLine,
  cellSites,
  cellsAsRun,
  deletedRuns,
  earlierRuns,
  editedRuns,
  FrameTable,
  lineNow,
  murmur2
} from '..';

const LEAKY = 'preds = []\nfor b in batches:\n    preds.append(model(b))';
// The usual fix: the loop under no_grad, a comment above it.
const FIXED =
  '# evaluation only\npreds = []\nwith torch.no_grad():\n    for b in batches:\n        preds.append(model(b))';

/** A block of 1 KiB that line 3 of a cell with code `code` allocated. */
function cellBlock(frames: FrameTable, address: number, code: string): Block {
  return {
    device: 0,
    address,
    size: 1024,
    requestedSize: 1024,
    state: 'active_allocated',
    stack: frames.internStack([frames.internFrame('<module>', `/tmp/ipykernel_41/${murmur2(code)}.py`, 3)]),
    segment: 0
  };
}

describe('lineNow', () => {
  it('follows a line that an edit moved, re-indented or not', () => {
    expect(lineNow(LEAKY, FIXED, 3)).toBe(5);
    expect(lineNow(LEAKY, FIXED, 1)).toBe(2);
    expect(lineNow(LEAKY, LEAKY, 3)).toBe(3);
    // lines below an edit keep their place from the end
    expect(lineNow('a = 1\nb = f()\nc = g()', 'a = 1\nb = f(2)\nextra()\nc = g()', 3)).toBe(4);
  });

  it('finds no line where the edit changed or removed it', () => {
    expect(lineNow(LEAKY, 'preds = [model(b).detach() for b in batches]', 3)).toBeNull();
    expect(lineNow(LEAKY, 'preds = []\nfor b in batches:\n    preds.append(model(b).detach())', 3)).toBeNull();
    // a line the run did not have
    expect(lineNow(LEAKY, FIXED, 7)).toBeNull();
  });

  it('pairs repeated lines as a line diff does, and a moved line by its unique text', () => {
    const before = 'x = f()\nx = f()\ny = g()';
    expect(lineNow(before, 'x = f()\nnew()\nx = f()\ny = g()', 2)).toBe(3);
    // swapped lines: the one the common sequence leaves out is still found where its text is unique
    expect(lineNow('a = f()\nb = g()', 'b = g()\na = f()', 1)).not.toBeNull();
    expect(lineNow('a = f()\nb = g()', 'b = g()\na = f()', 2)).not.toBeNull();
    expect([
      lineNow('a = f()\nb = g()', 'b = g()\na = f()', 1),
      lineNow('a = f()\nb = g()', 'b = g()\na = f()', 2)
    ]).toEqual([2, 1]);
  });

  it('stays bounded on long cells: beyond the aligned size, a line is found by its unique text', () => {
    const many = Array.from({ length: 3000 }, (_, k) => `v${k} = torch.empty(${k}, device="cuda")`);
    const edited = ['import torch', ...many.slice(0, 1500), 'changed()', ...many.slice(1501)].reverse();
    const started = Date.now();
    expect(lineNow(many.join('\n'), edited.join('\n'), 2001)).toBe(edited.indexOf(many[2000]) + 1);
    expect(lineNow(many.join('\n'), edited.join('\n'), 1501)).toBeNull();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('a frame of an edited cell', () => {
  const runs = [
    { cellId: 'model', executionCount: 1, kernelSession: 1, source: 'model = make()' },
    { cellId: 'preds', executionCount: 2, kernelSession: 1, source: LEAKY },
    { cellId: 'preds', executionCount: 3, kernelSession: 1, source: FIXED }
  ];

  it('still finds its cell, named by the run of that code, with the line as run and where it is now', () => {
    const cells = [
      { id: 'model', source: 'model = make()' },
      { id: 'preds', source: FIXED }
    ];
    const names = new CellCodeNames(cellsAsRun(cells, runs, 1), editedRuns(cells, runs, 1));
    const earlier = names.lookup(`/tmp/ipykernel_41/${murmur2(LEAKY)}.py`)!;
    expect(earlier.cells.map(c => [c.id, c.executionCount])).toEqual([['preds', 2]]);
    expect(earlier.ambiguous).toBe(false);
    expect(cellLine(earlier.cells[0], 3)).toMatchObject({
      line: 3,
      edited: true,
      textAsRun: 'preds.append(model(b))',
      lineNow: 5
    });
    // the run of the code the cell has now: not edited, named by that run
    const latest = names.lookup(`/tmp/ipykernel_41/${murmur2(FIXED)}.py`)!;
    expect(latest.cells.map(c => [c.id, c.executionCount])).toEqual([['preds', 3]]);
    expect(cellLine(latest.cells[0], 5)).toMatchObject({
      edited: false,
      textAsRun: 'preds.append(model(b))',
      lineNow: 5
    });
  });

  it('is found before the edited cell runs again, and after a restart names its own kernel', () => {
    const cells = [{ id: 'preds', source: FIXED }];
    // edited, not run again: the cell's only run is of the old code
    expect(cellsAsRun(cells, runs.slice(0, 2), 1).map(c => c.executionCount)).toEqual([2]);
    const names = new CellCodeNames(cellsAsRun(cells, runs.slice(0, 2), 1), editedRuns(cells, runs.slice(0, 2), 1));
    const earlier = names.lookup(`/tmp/ipykernel_41/${murmur2(LEAKY)}.py`)!;
    expect(cellLine(earlier.cells[0], 3)).toMatchObject({ edited: true, lineNow: 5 });
    // kernel 2 ran the old code again as [1]: kernel 1's frames name kernel 1's run, kernel 2's their own
    const restarted = [...runs, { cellId: 'preds', executionCount: 1, kernelSession: 2, source: LEAKY }];
    expect(editedRuns(cells, restarted, 1).map(c => [c.executionCount, c.kernel])).toEqual([[2, 1]]);
    expect(editedRuns(cells, restarted, 2).map(c => [c.executionCount, c.kernel])).toEqual([[1, 2]]);
  });

  it('names a run of the code the cell has again by that run, not by a later run of other code', () => {
    // ran LEAKY as [2], FIXED as [3], then edited back to LEAKY
    const cells = [{ id: 'preds', source: LEAKY }];
    expect(cellsAsRun(cells, runs, 1).map(c => c.executionCount)).toEqual([2]);
    expect(editedRuns(cells, runs, 1).map(c => [c.executionCount, c.sourceAsRun])).toEqual([[3, FIXED]]);
  });

  it('leaves out runs of deleted cells and runs that do not say their code', () => {
    const cells = [{ id: 'preds', source: FIXED }];
    const unknown = [
      { cellId: 'gone', executionCount: 1, kernelSession: 1, source: 'x = 1' },
      { cellId: 'preds', executionCount: 2, kernelSession: 1, source: null },
      { cellId: 'preds', executionCount: 3, kernelSession: 1 }
    ];
    expect(editedRuns(cells, unknown, 1)).toEqual([]);
    // runs that do not say their code name the cell as before
    expect(cellsAsRun(cells, unknown, 1).map(c => c.executionCount)).toEqual([3]);
  });

  it('is one of the copies where another cell has the code the edited cell ran', () => {
    const cells = [
      { id: 'preds', source: FIXED },
      { id: 'copy', source: LEAKY }
    ];
    const names = new CellCodeNames(cellsAsRun(cells, runs, 1), editedRuns(cells, runs, 1));
    const match = names.lookup(`/tmp/ipykernel_41/${murmur2(LEAKY)}.py`)!;
    expect(match.cells.map(c => c.id)).toEqual(['copy', 'preds']);
    expect(match.ambiguous).toBe(true);
    expect(match.cells.map(c => cellLine(c, 3).edited)).toEqual([false, true]);
  });

  it("keeps a line of the code before the edit apart from the same line now, in a snapshot's sites", () => {
    const cells = [{ id: 'preds', source: FIXED }];
    const frames = new FrameTable();
    const block = (address: number, code: string) => cellBlock(frames, address, code);
    const names = new CellCodeNames(cellsAsRun(cells, runs, 1), editedRuns(cells, runs, 1));
    const sites = cellSites([block(0, LEAKY), block(1024, FIXED)], frames, names);
    const named = sites.map(s => [s.cell?.executionCount, s.line, cellLine(s.cell!, s.line).edited]);
    expect(named.sort()).toEqual([
      [2, 3, true],
      [3, 3, false]
    ]);
  });
});

describe('a frame of a deleted cell', () => {
  const runs = [
    { cellId: 'model', executionCount: 1, kernelSession: 1, source: 'model = make()' },
    { cellId: 'preds', executionCount: 2, kernelSession: 1, source: LEAKY }
  ];
  // The user deleted the leaking cell after its run.
  const cells = [{ id: 'model', source: 'model = make()' }];
  const namesOf = (all: typeof runs, kernel = 1) =>
    new CellCodeNames(cellsAsRun(cells, all, kernel), earlierRuns(cells, all, kernel));

  it('finds the run, marked deleted, with the line as it ran and no line to go to', () => {
    const match = namesOf(runs).lookup(`/tmp/ipykernel_41/${murmur2(LEAKY)}.py`)!;
    expect(match.cells.map(c => [c.id, c.executionCount, c.deleted])).toEqual([['preds', 2, true]]);
    expect(match.ambiguous).toBe(false);
    expect(cellLine(match.cells[0], 3)).toMatchObject({
      line: 3,
      deleted: true,
      edited: false,
      textAsRun: 'preds.append(model(b))',
      lineNow: null
    });
    // a cell still in the notebook is not deleted
    const model = namesOf(runs).lookup(`/tmp/ipykernel_41/${murmur2('model = make()')}.py`)!;
    expect(cellLine(model.cells[0], 1)).toMatchObject({ deleted: false, lineNow: 1 });
  });

  it('names each code the cell ran by its own run, in the kernel of the snapshot', () => {
    const edited = [...runs, { cellId: 'preds', executionCount: 3, kernelSession: 1, source: FIXED }];
    expect(deletedRuns(cells, edited, 1).map(c => [c.executionCount, c.source, c.kernel])).toEqual([
      [2, LEAKY, null],
      [3, FIXED, null]
    ]);
    // kernel 2 ran the leaky code again as [1]: each kernel's frames name its own run, with its kernel
    const restarted = [...edited, { cellId: 'preds', executionCount: 1, kernelSession: 2, source: LEAKY }];
    expect(deletedRuns(cells, restarted, 1).map(c => [c.executionCount, c.kernel])).toEqual([
      [2, 1],
      [3, 1]
    ]);
    expect(deletedRuns(cells, restarted, 2).map(c => [c.executionCount, c.kernel])).toEqual([
      [1, 2],
      [3, 1]
    ]);
  });

  it('leaves out cells still in the notebook, runs without a cell, and runs that do not say their code', () => {
    const unknown = [
      ...runs,
      { cellId: null, executionCount: 3, kernelSession: 1, source: 'x = 1' },
      { cellId: 'gone', executionCount: 4, kernelSession: 1, source: null },
      { cellId: 'gone', executionCount: 5, kernelSession: 1 }
    ];
    expect(deletedRuns(cells, unknown, 1).map(c => c.id)).toEqual(['preds']);
    expect(deletedRuns([...cells, { id: 'preds', source: FIXED }], runs, 1)).toEqual([]);
  });

  it('is one of the copies where a cell of the notebook has the same code', () => {
    const withCopy = [...cells, { id: 'copy', source: LEAKY }];
    const names = new CellCodeNames(cellsAsRun(withCopy, runs, 1), deletedRuns(withCopy, runs, 1));
    const match = names.lookup(`/tmp/ipykernel_41/${murmur2(LEAKY)}.py`)!;
    expect(match.cells.map(c => [c.id, c.deleted ?? false])).toEqual([
      ['copy', false],
      ['preds', true]
    ]);
    expect(match.ambiguous).toBe(true);
  });

  it("keeps each code a deleted cell ran a site of its own in a snapshot's sites", () => {
    const frames = new FrameTable();
    const block = (address: number, code: string) => cellBlock(frames, address, code);
    const edited = [...runs, { cellId: 'preds', executionCount: 3, kernelSession: 1, source: FIXED }];
    const sites = cellSites([block(0, LEAKY), block(1024, FIXED)], frames, namesOf(edited));
    expect(
      sites.map(s => [s.cell?.executionCount, s.cell?.deleted, cellLine(s.cell!, s.line).textAsRun]).sort()
    ).toEqual([
      [2, true, 'preds.append(model(b))'],
      [3, true, 'with torch.no_grad():']
    ]);
  });
});
