import * as fs from 'fs';
import * as path from 'path';
import { normalizeSnapshot, readSnapshot } from '../../engine';
import { largestGroups, MIN_ROW_PX, segmentMapKeyTarget, segmentMapLayout, segmentMapPlaceOf } from '../segments';

describe('segmentMapLayout', () => {
  const snapshot = normalizeSnapshot({
    segments: [
      {
        device: 0,
        address: 1000,
        total_size: 1000,
        blocks: [
          { address: 1000, size: 500, state: 'active_allocated' },
          { address: 1500, size: 250, state: 'inactive' },
          { address: 1750, size: 250, state: 'active_pending_free' }
        ]
      },
      { device: 1, address: 0, total_size: 100, blocks: [{ address: 0, size: 100, state: 'inactive' }] }
    ]
  });

  it('puts blocks at their offsets, scaled to the segment, free space left out', () => {
    const layout = segmentMapLayout(snapshot, { width: 200, rowHeight: 10, maxRows: 10, groupOf: () => 'g' });
    expect(layout.rows.map(r => [r.label, r.y, r.freeBytes])).toEqual([
      ['cuda:0 0x3e8', 0, 250],
      ['cuda:1 0x0', 10, 100]
    ]);
    expect(layout.rows[0].items.map(i => [i.x, i.width, i.state, i.count])).toEqual([
      [0, 100, 'active_allocated', 1],
      [150, 50, 'active_pending_free', 1]
    ]);
    expect(layout.rows[1].items).toEqual([]);
    expect(layout.height).toBe(20);
  });

  it('summarises runs of sub-pixel blocks into bands and bounds the rows', () => {
    const s = readSnapshot(
      new Uint8Array(
        fs.readFileSync(path.resolve(__dirname, '../../../test-data/recordings/many_blocks--python/cell03.pickle.gz'))
      )
    );
    const bounded = segmentMapLayout(s, { width: 300, rowHeight: 6, maxRows: 100, groupOf: () => '' });
    expect(bounded.rows).toHaveLength(100);
    expect(bounded.hiddenRows).toBe(s.segments.length - 100);
    const layout = segmentMapLayout(s, { width: 300, rowHeight: 6, maxRows: 1000, groupOf: () => '' });
    const items = layout.rows.reduce((n, r) => n + r.items.length, 0);
    const represented = layout.rows.reduce((n, r) => n + r.items.reduce((m, i) => m + i.count, 0), 0);
    const live = s.blocks.filter(b => b.state !== 'inactive').length;
    expect(represented).toBe(live);
    // 40,500 blocks, mostly 1 KiB and 16 KiB ones in 2 and 20 MiB segments: a few hundred items
    expect(items).toBeLessThan(live / 20);
    expect(layout.rows.every(r => r.items.every(i => i.x >= 0 && i.x + i.width <= 300 + 1))).toBe(true);
  });

  it('draws segments to one scale, after the size column', () => {
    const layout = segmentMapLayout(snapshot, {
      width: 240,
      labelWidth: 40,
      rowHeight: 10,
      maxRows: 10,
      groupOf: () => 'g'
    });
    // the largest segment spans the 200 px after the column, one ten times smaller a tenth of it
    expect(layout.rows.map(r => [r.x, r.width, r.size])).toEqual([
      [40, 200, 1000],
      [40, 20, 100]
    ]);
    expect(layout.rows[0].items[0].x).toBe(40);
    const tiny = normalizeSnapshot({
      segments: [
        { device: 0, address: 0, total_size: 2 ** 30, blocks: [] },
        { device: 0, address: 2 ** 31, total_size: 2 ** 20, blocks: [] },
        { device: 0, address: 2 ** 32, total_size: 2 ** 20, blocks: [] }
      ]
    });
    const rows = segmentMapLayout(tiny, { width: 300, rowHeight: 10, maxRows: 10, groupOf: () => '' }).rows;
    expect(rows.map(r => r.width)).toEqual([300, MIN_ROW_PX, MIN_ROW_PX]);
  });

  it('gives colours to the groups that hold the most bytes', () => {
    const groups = ['a', 'b', 'c'];
    const s = normalizeSnapshot({
      segments: [
        {
          device: 0,
          address: 0,
          total_size: 1000,
          blocks: [
            { address: 0, size: 100, state: 'active_allocated' },
            { address: 100, size: 500, state: 'active_allocated' },
            { address: 600, size: 300, state: 'inactive' },
            { address: 900, size: 100, state: 'active_allocated' }
          ]
        }
      ]
    });
    const groupOf = (block: { address: number }) => (block.address === 900 ? '' : groups[block.address % 3]);
    // blocks at 0 and 600 (inactive) fall in 'a', 100 in 'b'; free and ungrouped blocks count for nothing
    expect(largestGroups(s, groupOf, 5)).toEqual(['b', 'a']);
    expect(largestGroups(s, groupOf, 1)).toEqual(['b']);
  });
});

describe('moving through the segment map from the keyboard', () => {
  // three segments: two blocks, none (all free), one wide block; then a band of small blocks
  const snapshot = normalizeSnapshot({
    segments: [
      {
        device: 0,
        address: 0,
        total_size: 1000,
        blocks: [
          { address: 0, size: 100, state: 'active_allocated' },
          { address: 100, size: 400, state: 'inactive' },
          { address: 500, size: 500, state: 'active_allocated' }
        ]
      },
      { device: 0, address: 5000, total_size: 1000, blocks: [{ address: 5000, size: 1000, state: 'inactive' }] },
      {
        device: 0,
        address: 9000,
        total_size: 1000,
        blocks: [
          { address: 9000, size: 300, state: 'active_allocated' },
          { address: 9300, size: 1, state: 'active_allocated' },
          { address: 9301, size: 1, state: 'active_allocated' },
          { address: 9302, size: 698, state: 'inactive' }
        ]
      }
    ]
  });
  const rows = segmentMapLayout(snapshot, { width: 100, rowHeight: 10, maxRows: 10, groupOf: () => '' }).rows;
  const move = (row: number, item: number, key: string) => segmentMapKeyTarget(rows, { row, item }, key);

  it('lays the example out as the tests below read it', () => {
    expect(rows.map(r => r.items.map(i => [i.x, i.count]))).toEqual([
      [
        [0, 1],
        [50, 1]
      ],
      [],
      [
        [0, 1],
        [30, 2]
      ]
    ]);
  });

  it('steps through a row and on to the next row that draws a block, past an empty one', () => {
    expect(move(0, 0, 'ArrowRight')).toEqual({ row: 0, item: 1 });
    expect(move(0, 1, 'ArrowRight')).toEqual({ row: 2, item: 0 });
    expect(move(2, 1, 'ArrowRight')).toBeNull();
    expect(move(2, 0, 'ArrowLeft')).toEqual({ row: 0, item: 1 });
    expect(move(0, 0, 'ArrowLeft')).toBeNull();
  });

  it('goes up and down to the nearest item of the next row that draws one', () => {
    // the band's middle (31) is nearer the first block's (5) than the wide one's (75)
    expect(move(2, 1, 'ArrowUp')).toEqual({ row: 0, item: 0 });
    expect(move(0, 1, 'ArrowDown')).toEqual({ row: 2, item: 1 });
    expect(move(0, 0, 'ArrowUp')).toBeNull();
    expect(move(2, 0, 'ArrowDown')).toBeNull();
  });

  it('goes to the ends of a row, and leaves other keys alone', () => {
    expect(move(2, 1, 'Home')).toEqual({ row: 2, item: 0 });
    expect(move(0, 0, 'End')).toEqual({ row: 0, item: 1 });
    expect(move(0, 0, 'a')).toBeNull();
    expect(move(1, 0, 'ArrowRight')).toBeNull();
  });

  it("finds the item that draws a block, a band's blocks included", () => {
    expect(segmentMapPlaceOf(rows, 0)).toEqual({ row: 0, item: 0 });
    const band = rows[2].items[1].block;
    expect(segmentMapPlaceOf(rows, band + 1)).toEqual({ row: 2, item: 1 });
    // a free block is drawn by no item
    expect(segmentMapPlaceOf(rows, 1)).toBeNull();
  });
});
