/**
 * @jest-environment node
 */
import { CellCodeNames, cellTag, formatBytes, murmur2, parseCellFilename, sessionCellName, sessionCellTag } from '..';

describe('cell code names', () => {
  it('hashes like ipykernel (known values from recorded sessions)', () => {
    expect(murmur2('import torch, torch.nn as nn, torch.nn.functional as F\ntorch.manual_seed(0)\n')).toBeGreaterThan(
      0
    );
    expect(murmur2('')).toBe(murmur2('', 0xc70f6907));
    // utf-8 bytes, not UTF-16 code units, are hashed
    expect(murmur2('é')).not.toBe(murmur2('\u00e9'.normalize('NFD')));
  });

  it('parses ipykernel and IPython names and nothing else', () => {
    expect(parseCellFilename('/tmp/ipykernel_709/1313211645.py')).toEqual({
      kind: 'ipykernel',
      pid: 709,
      hash: 1313211645
    });
    expect(parseCellFilename('<ipython-input-12-0123456789ab>')).toEqual({ kind: 'ipython-input', executionCount: 12 });
    expect(parseCellFilename('/home/me/ipykernel_tools/1.py.bak')).toBeNull();
    expect(parseCellFilename('/home/me/train.py')).toBeNull();
  });

  it('maps names to cells and keeps identical sources ambiguous', () => {
    const src = 'x = torch.ones(3, device="cuda")';
    const names = new CellCodeNames([
      { id: 'a', source: src, executionCount: 1 },
      { id: 'b', source: 'y = 1', executionCount: 2 },
      { id: 'c', source: src, executionCount: 3 }
    ]);
    const match = names.lookup(`/tmp/ipykernel_9/${murmur2(src)}.py`)!;
    expect(match.cells.map(c => c.id)).toEqual(['a', 'c']);
    expect(match.ambiguous).toBe(true);
    expect(names.lookup(`/tmp/ipykernel_9/${murmur2('y = 1')}.py`)!.ambiguous).toBe(false);
    expect(names.lookup('<ipython-input-2-abcdef012345>')!.cells[0].id).toBe('b');
    expect(names.lookup('/tmp/ipykernel_9/1.py')).toBeNull();
  });

  it("gives each cell its place among the notebook's code cells, and a deleted cell's run none", () => {
    const names = new CellCodeNames(
      [
        { id: 'a', source: 'x = 1' },
        { id: 'b', source: 'y = 2' }
      ],
      [{ id: 'gone', source: 'z = 3', deleted: true }]
    );
    expect(['a', 'b', 'gone'].map(id => names.placeOf(id))).toEqual([0, 1, undefined]);
  });

  it('tells cells apart by the count their prompt shows, else by their place', () => {
    const place = { index: 2, total: 5 };
    expect(cellTag({ id: 'a', source: '', executionCount: 7, position: place })).toBe('[7]');
    // Two copies of one cell, neither run in this kernel: their places differ where "[ ]" would not.
    expect(cellTag({ id: 'b', source: '', executionCount: null, position: place })).toBe('2/5');
    expect(cellTag({ id: 'c', source: '', executionCount: null, position: { index: 4, total: 5 } })).toBe('4/5');
    expect(cellTag({ id: 'd', source: '' })).toBe('[ ]');
  });

  it("names a session folder's cell by its prompt's count, as the panel does, not by its 0-based manifest index", () => {
    expect(sessionCellName(2, 3)).toBe('Cell [3]');
    // Without a count, "Cell [ ]" alone tells no cell apart: the index does.
    expect(sessionCellName(4, null)).toBe('Cell [ ] (index 4)');
  });

  it('names a labelled cell (a capture point of a multi-rank job) by its label, as the ranks table does', () => {
    // Before: "Cell [ ] (index 3)" in session --rank 1 where the ranks table said "step 4".
    expect(sessionCellName(3, null, 'step 4')).toBe('step 4');
    expect(sessionCellTag(null, 'after eval')).toBe('after eval');
    expect(sessionCellTag(3, null)).toBe('[3]');
    expect(sessionCellName(4, null, '')).toBe('Cell [ ] (index 4)');
  });
});

describe('formatBytes', () => {
  it('uses binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(1288490188, true)).toBe('+1.20 GiB');
    expect(formatBytes(-20 * 2 ** 20)).toBe('-20.0 MiB');
  });
});
