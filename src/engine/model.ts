/**
 * The normalized snapshot model every view and command works on.
 *
 * Frames and stacks are interned into a `FrameTable` that several snapshots
 * can share, so a stack is one integer and comparing stacks across snapshots
 * is an integer comparison.
 */

/** One Python (or C++) frame as PyTorch records it. */
export interface Frame {
  readonly name: string;
  readonly filename: string;
  readonly line: number;
}

/** The state PyTorch gives a block. */
export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

/** A block inside a segment: allocated, freed but waiting on a stream, or free space. */
export interface Block {
  readonly device: number;
  readonly address: number;
  readonly size: number;
  readonly requestedSize: number;
  readonly state: BlockState;
  /** Stack id in the snapshot's FrameTable; 0 is the empty stack. */
  readonly stack: number;
  /** Index of the owning segment in `Snapshot.segments`. */
  readonly segment: number;
}

/** A range reserved from the device by the caching allocator. */
export interface Segment {
  readonly device: number;
  readonly address: number;
  readonly totalSize: number;
  readonly stream: number;
  readonly segmentType: string;
  /** Memory pool, as PyTorch's (id, id) tuple joined with a comma. */
  readonly pool: string;
  readonly isExpandable: boolean;
  /** Stack that reserved the segment. */
  readonly stack: number;
}

/** One entry of the allocator's history ring buffer. */
export interface TraceEntry {
  readonly device: number;
  readonly action: string;
  /** Block or segment address; null for entries without one (`oom`, `snapshot`). */
  readonly address: number | null;
  readonly size: number;
  readonly stream: number;
  readonly timeUs: number | null;
  readonly stack: number;
  readonly userMetadata: string;
  /** Free device bytes reported by an `oom` entry. */
  readonly deviceFree: number | null;
}

/** Totals for one device, as `torch.cuda.memory_*` would report them. */
export interface DeviceTotals {
  readonly device: number;
  /** Bytes in active_allocated blocks (torch.cuda.memory_allocated). */
  readonly allocatedBytes: number;
  /** Bytes in active blocks, pending frees included. */
  readonly activeBytes: number;
  /** Bytes in segments (torch.cuda.memory_reserved). */
  readonly reservedBytes: number;
  /** Reserved bytes not in active blocks. */
  readonly inactiveBytes: number;
  /** Largest contiguous free range inside one segment. */
  readonly largestFreeBytes: number;
  readonly activeBlocks: number;
  readonly allocatedBlocks: number;
  readonly segments: number;
}

/**
 * The stretch of allocation history a live snapshot's traces cover: every
 * entry after `sinceUs` (the newest entry the previous capture saw; null:
 * since history began) up to `untilUs`, the newest entry this capture saw.
 * Snapshot files have none: their traces are whatever the ring buffer held.
 */
export interface TraceHistory {
  readonly sinceUs: number | null;
  readonly untilUs: number | null;
  /** False when entries were lost: the ring buffer wrapped, or the helper left some out. */
  readonly complete: boolean;
}

/** A normalized allocator snapshot. */
export interface Snapshot {
  /** Segments sorted by device, then address. */
  readonly segments: readonly Segment[];
  /** All blocks sorted by device, then address. */
  readonly blocks: readonly Block[];
  readonly traces: readonly TraceEntry[];
  /** For snapshots from the kernel's wire: which stretch of history `traces` covers. */
  readonly history?: TraceHistory;
  /** Per-device totals, sorted by device; devices without segments show zeros. */
  readonly totals: readonly DeviceTotals[];
  /**
   * Devices the process saw (one history list each in the file); absent where
   * the snapshot does not say (torch 2.0's files, the kernel's wire).
   */
  readonly deviceCount?: number;
  readonly frames: FrameTable;
}

/** Interns frames and stacks to small integers; shared by snapshots of one session. */
export class FrameTable {
  constructor() {
    this._stacks.push([]);
    this._stackIds.set('', 0);
  }

  /** The number of distinct frames. */
  get frameCount(): number {
    return this._frames.length;
  }

  /** The number of distinct stacks, the empty one included. */
  get stackCount(): number {
    return this._stacks.length;
  }

  /** The frame with this id. */
  frame(id: number): Frame {
    return this._frames[id];
  }

  /** The frame ids of a stack, innermost first. */
  stack(id: number): readonly number[] {
    return this._stacks[id];
  }

  /** The id of a frame, added when new. */
  internFrame(name: string, filename: string, line: number): number {
    // Nested maps: snapshot strings repeat as shared objects, whose hashes V8
    // caches, so three lookups beat building one key string per frame.
    let byName = this._frameIds.get(filename);
    if (byName === undefined) {
      byName = new Map();
      this._frameIds.set(filename, byName);
    }
    let byLine = byName.get(name);
    if (byLine === undefined) {
      byLine = new Map();
      byName.set(name, byLine);
    }
    let id = byLine.get(line);
    if (id === undefined) {
      id = this._frames.length;
      this._frames.push({ name, filename, line });
      byLine.set(line, id);
    }
    return id;
  }

  /** The id of a stack of frame ids (innermost first), added when new. */
  internStack(frameIds: number[]): number {
    const key = frameIds.join(',');
    let id = this._stackIds.get(key);
    if (id === undefined) {
      id = this._stacks.length;
      this._stacks.push(frameIds);
      this._stackIds.set(key, id);
    }
    return id;
  }

  private readonly _frames: Frame[] = [];
  private readonly _frameIds = new Map<string, Map<string, Map<number, number>>>();
  private readonly _stacks: number[][] = [];
  private readonly _stackIds = new Map<string, number>();
}

/** A per-device total summed over the snapshot's devices, or taken for one device. */
export function totalBytes(
  snapshot: Snapshot,
  key: 'allocatedBytes' | 'reservedBytes' | 'activeBytes' | 'inactiveBytes',
  device: number | null = null
): number {
  let sum = 0;
  for (const t of snapshot.totals) {
    if (device === null || t.device === device) {
      sum += t[key];
    }
  }
  return sum;
}

/** True for blocks the program still holds (what memory_allocated counts). */
export function isAllocated(block: Block): boolean {
  return block.state === 'active_allocated';
}
