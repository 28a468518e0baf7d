/**
 * The kernel helper's compact snapshot message (kernel-helpers/.../compact.py)
 * decoded into the normalized model. Frames and stacks arrive once per kernel
 * and are referred to by id afterwards, so one decoder follows one kernel
 * session; several decoders can share one FrameTable, which keeps snapshots
 * from before and after a kernel restart comparable.
 */
import { SnapshotError } from './errors';
import { Block, BlockState, FrameTable, Segment, Snapshot } from './model';
import { computeTotals } from './normalize';

/** Allocator statistics the helper sends for one device. */
export interface IWireDeviceStats {
  device: number;
  allocated: number;
  reserved: number;
  peak_allocated: number;
  peak_reserved: number;
  device_free: number | null;
  device_total: number | null;
}

/** A snapshot message as the helper sends it (protocol version 1). */
export interface IWireSnapshot {
  v: number;
  type: 'snapshot';
  reason: 'cell' | 'oom';
  cell_id: string | null;
  execution_count: number | null;
  error: string | null;
  frames: { base: number; items: [string, number, string][] };
  stacks: { base: number; items: number[][] };
  segments: {
    device: number[];
    address: number[];
    total_size: number[];
    stream: number[];
    pool: string[];
    /** 'large' or 'small' (absent from messages of earlier helpers). */
    type?: string[];
    stack: number[];
  };
  blocks: {
    segment: number[];
    address: number[];
    size: number[];
    requested_size: number[];
    state: number[];
    stack: number[];
  };
  devices: IWireDeviceStats[];
  replay?: string;
  capture_ms?: number;
}

const WIRE_STATES: readonly BlockState[] = ['active_allocated', 'active_pending_free'];

// Addresses stay below 2^48, so address * 32 + device is an exact key for 32 devices.
const DEVICE_SLOTS = 32;

function sameBlock(a: Block, b: Block): boolean {
  return (
    a.size === b.size &&
    a.requestedSize === b.requestedSize &&
    a.state === b.state &&
    a.stack === b.stack &&
    a.segment === b.segment
  );
}

function sameSegment(a: Segment, b: Segment): boolean {
  return a.totalSize === b.totalSize && a.stream === b.stream && a.pool === b.pool && a.stack === b.stack;
}

/** Decodes the snapshot messages of one kernel session. */
export class WireDecoder {
  constructor(readonly frames: FrameTable) {}

  /** The snapshot a message describes; throws SnapshotError when messages were lost. */
  decode(message: IWireSnapshot): Snapshot {
    const { frames, stacks, segments: s, blocks: b } = message;
    if (frames.base !== this._frameIds.length || stacks.base !== this._stackIds.length) {
      throw new SnapshotError(
        `snapshot message out of order: frames from ${frames.base}, expected ${this._frameIds.length}`
      );
    }
    for (const [filename, line, name] of frames.items) {
      this._frameIds.push(this.frames.internFrame(name, filename, line));
    }
    for (const ids of stacks.items) {
      this._stackIds.push(this.frames.internStack(ids.map(id => this._frame(id))));
    }
    const order = s.address.map((_, i) => i).sort((x, y) => s.device[x] - s.device[y] || s.address[x] - s.address[y]);
    const position = new Array<number>(order.length);
    const previousSegments = this._segments;
    this._segments = new Map();
    const segments: Segment[] = order.map((i, k) => {
      position[i] = k;
      const segment: Segment = {
        device: s.device[i],
        address: s.address[i],
        totalSize: s.total_size[i],
        stream: s.stream[i],
        segmentType: s.type?.[i] ?? '',
        pool: s.pool[i],
        isExpandable: false,
        stack: this._stack(s.stack[i])
      };
      return this._share(previousSegments, this._segments, segment, sameSegment);
    });
    const previousBlocks = this._blocks;
    this._blocks = new Map();
    const blocks: Block[] = b.address.map((address, i) => {
      const segment = position[b.segment[i]];
      if (segment === undefined || WIRE_STATES[b.state[i]] === undefined) {
        throw new SnapshotError(`snapshot message block ${i} is malformed`);
      }
      const block: Block = {
        device: segments[segment].device,
        address,
        size: b.size[i],
        requestedSize: b.requested_size[i],
        state: WIRE_STATES[b.state[i]],
        stack: this._stack(b.stack[i]),
        segment
      };
      return this._share(previousBlocks, this._blocks, block, sameBlock);
    });
    blocks.sort((x, y) => x.segment - y.segment || x.address - y.address);
    const deviceCount = message.devices.reduce((n, d) => Math.max(n, d.device + 1), 0);
    return { segments, blocks, traces: [], totals: computeTotals(segments, blocks, deviceCount), frames: this.frames };
  }

  /**
   * The previous snapshot's object when it is equal, so the snapshots of a
   * session share every block a cell did not touch (a store of 200 snapshots
   * of 40,000 blocks then holds about one copy of each block).
   */
  private _share<T extends { device: number; address: number }>(
    previous: Map<number, T>,
    next: Map<number, T>,
    item: T,
    same: (a: T, b: T) => boolean
  ): T {
    const key = item.address * DEVICE_SLOTS + item.device;
    const old = previous.get(key);
    const kept = old !== undefined && same(old, item) ? old : item;
    next.set(key, kept);
    return kept;
  }

  private _frame(id: number): number {
    const mapped = this._frameIds[id];
    if (mapped === undefined) {
      throw new SnapshotError(`snapshot message refers to unknown frame ${id}`);
    }
    return mapped;
  }

  private _stack(id: number): number {
    const mapped = this._stackIds[id];
    if (mapped === undefined) {
      throw new SnapshotError(`snapshot message refers to unknown stack ${id}`);
    }
    return mapped;
  }

  private _segments = new Map<number, Segment>();
  private _blocks = new Map<number, Block>();
  private readonly _frameIds: number[] = [];
  private readonly _stackIds: number[] = [0];
}
