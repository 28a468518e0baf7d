/**
 * Geometry of the segment map, in pure functions: one row per segment, drawn
 * to scale (a 2 MiB segment is a tenth as long as a 20 MiB one), its blocks as
 * rectangles at their offsets, free space as the background. Blocks
 * narrower than a few pixels are summarised into one band per run, so a row
 * never holds more than about 2 * width / MIN_BLOCK_PX items, whatever the
 * block count (PyTorch's MemoryViz summarises small allocations the same way).
 */
import { Block, BlockRoles, Role, ROLES, Snapshot } from '../engine';

/** Blocks narrower than this many pixels join a summary band. */
export const MIN_BLOCK_PX = 4;

/** A drawn block, or a band standing for a run of blocks too small to draw. */
export interface ISegmentMapItem {
  x: number;
  width: number;
  /** Index into snapshot.blocks of the (first) block. */
  block: number;
  /** How many blocks the item stands for (1 for a drawn block), and their bytes. */
  count: number;
  bytes: number;
  state: Block['state'];
  /** Colour group: the allocating cell's key, or '' for blocks outside any cell. */
  group: string;
}

/** One segment's row. */
export interface ISegmentRow {
  segment: number;
  y: number;
  label: string;
  /** Left edge of the row and its drawn width, proportional to the segment's size. */
  x: number;
  width: number;
  /** The segment's size in bytes. */
  size: number;
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

/** Rows are never drawn narrower than this, however small the segment. */
export const MIN_ROW_PX = 6;

/** Options of the layout. */
export interface ISegmentMapOptions {
  /** Width of the whole map, the size column included. */
  width: number;
  /** Width of the column on the left that holds segment sizes (0 for none). */
  labelWidth?: number;
  rowHeight: number;
  maxRows: number;
  /** The colour group of a block (e.g. the cell that allocated it). */
  groupOf: (block: Block) => string;
}

/**
 * Lay out the segments of a snapshot. One scale holds for every row: the
 * largest segment spans the width after the size column, the others are
 * shorter in proportion (at least MIN_ROW_PX).
 */
export function segmentMapLayout(snapshot: Snapshot, options: ISegmentMapOptions): ISegmentMapLayout {
  const { width, rowHeight, maxRows, groupOf } = options;
  const left = options.labelWidth ?? 0;
  const rows: ISegmentRow[] = [];
  let b = 0;
  const blocks = snapshot.blocks;
  const shown = Math.min(snapshot.segments.length, maxRows);
  let largest = 1;
  for (let s = 0; s < shown; s++) {
    largest = Math.max(largest, snapshot.segments[s].totalSize);
  }
  const scale = (width - left) / largest;
  for (let s = 0; s < shown; s++) {
    const seg = snapshot.segments[s];
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
      const x = left + (block.address - seg.address) * scale;
      const w = block.size * scale;
      if (w >= MIN_BLOCK_PX) {
        band = null;
        items.push({ x, width: w, block: b, count: 1, bytes: block.size, state: block.state, group: groupOf(block) });
      } else if (band && x - (band.x + band.width) < MIN_BLOCK_PX) {
        band.width = Math.max(band.width, x + w - band.x);
        band.count++;
        band.bytes += block.size;
      } else {
        band = { x, width: w, block: b, count: 1, bytes: block.size, state: block.state, group: '' };
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
      x: left,
      width: Math.max(MIN_ROW_PX, seg.totalSize * scale),
      size: seg.totalSize,
      items,
      freeBytes: seg.totalSize - used
    });
  }
  return { rows, height: shown * rowHeight, hiddenRows: snapshot.segments.length - shown };
}

/**
 * The colour groups worth a colour of their own: the `max` groups holding the
 * most allocated bytes, largest first. Blocks outside any group ('') and the
 * groups after these share one neutral colour.
 */
export function largestGroups(snapshot: Snapshot, groupOf: (block: Block) => string, max: number): string[] {
  const bytes = new Map<string, number>();
  for (const block of snapshot.blocks) {
    if (block.state === 'inactive') {
      continue;
    }
    const group = groupOf(block);
    if (group) {
      bytes.set(group, (bytes.get(group) ?? 0) + block.size);
    }
  }
  return [...bytes.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, max)
    .map(([group]) => group);
}

/** A role the segment map's legend names, with the bytes its blocks hold. */
export interface IRoleKey {
  role: Role;
  bytes: number;
}

/**
 * The roles of a snapshot's allocated blocks, in the kernel's role order,
 * each with its bytes; roles that hold no block are left out.
 */
export function rolesPresent(snapshot: Snapshot, roles: BlockRoles): IRoleKey[] {
  const bytes = new Map<Role, number>();
  for (const b of snapshot.blocks) {
    if (b.state === 'active_allocated') {
      const role = roles.roleOf(b);
      bytes.set(role, (bytes.get(role) ?? 0) + b.size);
    }
  }
  return ROLES.filter(r => bytes.has(r)).map(role => ({ role, bytes: bytes.get(role)! }));
}

/** Where a drawn item of the segment map lies: its row's index in the layout, and its own in that row. */
export interface ISegmentMapPlace {
  row: number;
  item: number;
}

/**
 * The item a key moves to from `at`, in reading order across rows: Left and
 * Right step through a row and on to the next or previous row that draws
 * anything, Up and Down go to the nearest item (by its middle) of the row
 * above or below, Home and End to the ends of the row. Null for a key the
 * map leaves alone, or where there is nowhere to go.
 */
export function segmentMapKeyTarget(
  rows: readonly ISegmentRow[],
  at: ISegmentMapPlace,
  key: string
): ISegmentMapPlace | null {
  const items = rows[at.row]?.items ?? [];
  if (at.item < 0 || at.item >= items.length) {
    return null;
  }
  const drawn = (row: number) => (rows[row]?.items.length ?? 0) > 0;
  const nextRow = (step: number) => {
    for (let r = at.row + step; r >= 0 && r < rows.length; r += step) {
      if (drawn(r)) {
        return r;
      }
    }
    return -1;
  };
  switch (key) {
    case 'ArrowRight': {
      if (at.item < items.length - 1) {
        return { row: at.row, item: at.item + 1 };
      }
      const row = nextRow(1);
      return row < 0 ? null : { row, item: 0 };
    }
    case 'ArrowLeft': {
      if (at.item > 0) {
        return { row: at.row, item: at.item - 1 };
      }
      const row = nextRow(-1);
      return row < 0 ? null : { row, item: rows[row].items.length - 1 };
    }
    case 'ArrowDown':
    case 'ArrowUp': {
      const row = nextRow(key === 'ArrowDown' ? 1 : -1);
      if (row < 0) {
        return null;
      }
      const from = items[at.item];
      const middle = from.x + from.width / 2;
      const distance = (i: ISegmentMapItem) => Math.abs(i.x + i.width / 2 - middle);
      let best = 0;
      rows[row].items.forEach((item, k) => {
        if (distance(item) < distance(rows[row].items[best])) {
          best = k;
        }
      });
      return { row, item: best };
    }
    case 'Home':
      return { row: at.row, item: 0 };
    case 'End':
      return { row: at.row, item: items.length - 1 };
    default:
      return null;
  }
}

/** Where the layout draws block `block` (the item that stands for it, a band included); null where it draws none. */
export function segmentMapPlaceOf(rows: readonly ISegmentRow[], block: number): ISegmentMapPlace | null {
  for (let row = 0; row < rows.length; row++) {
    const items = rows[row].items;
    for (let item = 0; item < items.length; item++) {
      if (block >= items[item].block && block < items[item].block + items[item].count) {
        return { row, item };
      }
    }
  }
  return null;
}
