/**
 * Geometry of the segment map, in pure functions: one row per segment, its
 * blocks as rectangles at their offsets, free space as the background. Blocks
 * narrower than a few pixels are summarised into one band per run, so a row
 * never holds more than about 2 * width / MIN_BLOCK_PX items, whatever the
 * block count (PyTorch's MemoryViz summarises small allocations the same way).
 */
import { Block, Snapshot } from '../engine';

/** Blocks narrower than this many pixels join a summary band. */
export const MIN_BLOCK_PX = 4;

/** A drawn block, or a band standing for a run of blocks too small to draw. */
export interface ISegmentMapItem {
  x: number;
  width: number;
  /** Index into snapshot.blocks of the (first) block. */
  block: number;
  /** How many blocks the item stands for (1 for a drawn block). */
  count: number;
  state: Block['state'];
  /** Colour group: the allocating cell's key, or '' for blocks outside any cell. */
  group: string;
}

/** One segment's row. */
export interface ISegmentRow {
  segment: number;
  y: number;
  label: string;
  items: ISegmentMapItem[];
  /** Free bytes in the segment, and the largest free run. */
  freeBytes: number;
}

/** The whole map. */
export interface ISegmentMapLayout {
  rows: ISegmentRow[];
  height: number;
  /** Segments left out beyond maxRows. */
  hiddenRows: number;
}

/** Options of the layout. */
export interface ISegmentMapOptions {
  width: number;
  rowHeight: number;
  maxRows: number;
  /** The colour group of a block (e.g. the cell that allocated it). */
  groupOf: (block: Block) => string;
}

/** Lay out the segments of a snapshot. Each row spans the full width: offsets are relative to the segment size. */
export function segmentMapLayout(snapshot: Snapshot, options: ISegmentMapOptions): ISegmentMapLayout {
  const { width, rowHeight, maxRows, groupOf } = options;
  const rows: ISegmentRow[] = [];
  let b = 0;
  const blocks = snapshot.blocks;
  const shown = Math.min(snapshot.segments.length, maxRows);
  for (let s = 0; s < shown; s++) {
    const seg = snapshot.segments[s];
    const scale = width / Math.max(1, seg.totalSize);
    const items: ISegmentMapItem[] = [];
    let used = 0;
    let band: ISegmentMapItem | null = null;
    while (b < blocks.length && blocks[b].segment < s) {
      b++;
    }
    for (; b < blocks.length && blocks[b].segment === s; b++) {
      const block = blocks[b];
      if (block.state === 'inactive') {
        band = null;
        continue;
      }
      used += block.size;
      const x = (block.address - seg.address) * scale;
      const w = block.size * scale;
      if (w >= MIN_BLOCK_PX) {
        band = null;
        items.push({ x, width: w, block: b, count: 1, state: block.state, group: groupOf(block) });
      } else if (band && x - (band.x + band.width) < MIN_BLOCK_PX) {
        band.width = Math.max(band.width, x + w - band.x);
        band.count++;
      } else {
        band = { x, width: w, block: b, count: 1, state: block.state, group: '' };
        items.push(band);
      }
    }
    for (const item of items) {
      item.width = Math.max(item.width, 1);
    }
    rows.push({
      segment: s,
      y: s * rowHeight,
      label: `cuda:${seg.device} 0x${seg.address.toString(16)}`,
      items,
      freeBytes: seg.totalSize - used
    });
  }
  return { rows, height: shown * rowHeight, hiddenRows: snapshot.segments.length - shown };
}
