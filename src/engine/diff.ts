/**
 * Block-level diff of two snapshots, and its grouping by allocation site.
 *
 * A block's identity is (device, address, size, stack): the same address
 * reused for a new tensor of another size or from another line is a free and
 * a birth, not a kept block. Where the snapshots carry the allocation history
 * between them, a block allocated in between is born even when its identity
 * matches one before (freed and allocated again: a re-run cell). Both block
 * lists are sorted by (device, address), so one merge pass does the diff
 * without building keys.
 */
import { allocationSite, IFrameFilterOptions } from './frames';
import { allocatedIn, historyBetween } from './history';
import { Block, FrameTable, Snapshot, isAllocated } from './model';

/** Net change on one device. */
export interface IDeviceDelta {
  readonly device: number;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly netBytes: number;
}

/** Blocks born, freed and kept between two snapshots. */
export interface SnapshotDiff {
  readonly born: readonly Block[];
  readonly freed: readonly Block[];
  readonly keptCount: number;
  readonly keptBytes: number;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly netBytes: number;
  readonly devices: readonly IDeviceDelta[];
  /** True when allocation history between the snapshots decided which blocks were allocated again. */
  readonly byHistory: boolean;
  /** Frames of both snapshots, which must share one table. */
  readonly frames: FrameTable;
}

/** The blocks of a diff that share an allocation site. */
export interface AllocationSite {
  /** Site frame id, or -1 for blocks without a Python stack. */
  readonly frameId: number;
  readonly count: number;
  readonly bornCount: number;
  readonly freedCount: number;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly netBytes: number;
  /** Stack of the largest block, standing for the group. */
  readonly stack: number;
  /** Distinct stacks in the group. */
  readonly stackCount: number;
  readonly born: readonly Block[];
  readonly freed: readonly Block[];
}

/** Diff the allocated blocks of `before` and `after` (snapshots sharing one FrameTable). */
export function diffSnapshots(before: Snapshot, after: Snapshot): SnapshotDiff {
  if (before.frames !== after.frames) {
    throw new Error('diffSnapshots: snapshots must share one FrameTable');
  }
  const a = before.blocks;
  const b = after.blocks;
  const born: Block[] = [];
  const freed: Block[] = [];
  const history = historyBetween(before, after);
  const allocated = history ? allocatedIn(history.entries) : null;
  // Alike in both, but allocated in between: freed and born again.
  const reborn = (y: Block) => allocated?.get(y.device)?.get(y.address) === y.size;
  let keptCount = 0;
  let keptBytes = 0;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = i < a.length ? a[i] : undefined;
    const y = j < b.length ? b[j] : undefined;
    if (x === y && isAllocated(x!) && reborn(x!)) {
      freed.push(x!);
      born.push(x!);
      i++;
      j++;
      continue;
    }
    if (x === y) {
      // The store shares unchanged blocks between snapshots: the same object is kept.
      if (isAllocated(x!)) {
        keptCount++;
        keptBytes += x!.size;
      }
      i++;
      j++;
      continue;
    }
    const order = !x ? 1 : !y ? -1 : x.device - y.device || x.address - y.address;
    if (order < 0) {
      if (isAllocated(x!)) {
        freed.push(x!);
      }
      i++;
    } else if (order > 0) {
      if (isAllocated(y!)) {
        born.push(y!);
      }
      j++;
    } else {
      const xa = isAllocated(x!);
      const ya = isAllocated(y!);
      if (xa && ya && x!.size === y!.size && x!.stack === y!.stack && !reborn(y!)) {
        keptCount++;
        keptBytes += x!.size;
      } else {
        if (xa) {
          freed.push(x!);
        }
        if (ya) {
          born.push(y!);
        }
      }
      i++;
      j++;
    }
  }
  const devices = new Map<number, { born: number; freed: number }>();
  const dev = (d: number) => {
    let v = devices.get(d);
    if (!v) {
      v = { born: 0, freed: 0 };
      devices.set(d, v);
    }
    return v;
  };
  for (const t of before.totals) {
    dev(t.device);
  }
  for (const t of after.totals) {
    dev(t.device);
  }
  let bornBytes = 0;
  let freedBytes = 0;
  for (const blk of born) {
    bornBytes += blk.size;
    dev(blk.device).born += blk.size;
  }
  for (const blk of freed) {
    freedBytes += blk.size;
    dev(blk.device).freed += blk.size;
  }
  return {
    born,
    freed,
    keptCount,
    keptBytes,
    bornBytes,
    freedBytes,
    netBytes: bornBytes - freedBytes,
    devices: [...devices.entries()]
      .sort((p, q) => p[0] - q[0])
      .map(([device, v]) => ({ device, bornBytes: v.born, freedBytes: v.freed, netBytes: v.born - v.freed })),
    byHistory: history !== null,
    frames: after.frames
  };
}

/** Group a diff's blocks by allocation site, largest change first. */
export function groupBySite(diff: SnapshotDiff, options: IFrameFilterOptions = {}): AllocationSite[] {
  const table = diff.frames;
  // Site lookups are per stack, and stacks repeat: resolve each once.
  const siteOfStack = new Map<number, number>();
  const siteOf = (stack: number): number => {
    let site = siteOfStack.get(stack);
    if (site === undefined) {
      site = allocationSite(table, stack, options);
      siteOfStack.set(stack, site);
    }
    return site;
  };
  type Acc = {
    frameId: number;
    born: Block[];
    freed: Block[];
    bornBytes: number;
    freedBytes: number;
    largest: Block | null;
    stacks: Set<number>;
  };
  const groups = new Map<number, Acc>();
  const add = (blk: Block, isBorn: boolean) => {
    const site = siteOf(blk.stack);
    let g = groups.get(site);
    if (!g) {
      g = { frameId: site, born: [], freed: [], bornBytes: 0, freedBytes: 0, largest: null, stacks: new Set() };
      groups.set(site, g);
    }
    if (isBorn) {
      g.born.push(blk);
      g.bornBytes += blk.size;
    } else {
      g.freed.push(blk);
      g.freedBytes += blk.size;
    }
    g.stacks.add(blk.stack);
    if (!g.largest || blk.size > g.largest.size) {
      g.largest = blk;
    }
  };
  for (const blk of diff.born) {
    add(blk, true);
  }
  for (const blk of diff.freed) {
    add(blk, false);
  }
  return [...groups.values()]
    .map(g => ({
      frameId: g.frameId,
      count: g.born.length + g.freed.length,
      bornCount: g.born.length,
      freedCount: g.freed.length,
      bornBytes: g.bornBytes,
      freedBytes: g.freedBytes,
      netBytes: g.bornBytes - g.freedBytes,
      stack: g.largest ? g.largest.stack : 0,
      stackCount: g.stacks.size,
      born: g.born,
      freed: g.freed
    }))
    .sort(
      (p, q) =>
        Math.abs(q.netBytes) - Math.abs(p.netBytes) ||
        q.bornBytes + q.freedBytes - (p.bornBytes + p.freedBytes) ||
        p.frameId - q.frameId
    );
}
