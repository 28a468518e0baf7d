/**
 * The kernel helper's compact snapshot message (kernel-helpers/.../compact.py)
 * decoded into the normalized model. Frames and stacks arrive once per kernel
 * and are referred to by id afterwards, so one decoder follows one kernel
 * session; several decoders can share one FrameTable, which keeps snapshots
 * from before and after a kernel restart comparable.
 */
import { AddressMap } from './addressMap';
import { checkLayout } from './consistency';
import { SnapshotError } from './errors';
import { Block, BlockState, FrameTable, Segment, Snapshot, TraceEntry, TraceHistory } from './model';
import { computeTotals } from './normalize';
import { WIRE_BLOCK_STATES } from './protocol.generated';

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

/** Allocated and reserved bytes on one device when a cell started. */
export interface IWireBefore {
  device: number;
  allocated: number;
  reserved?: number;
}

/**
 * A snapshot message as the helper sends it (protocol version 2). A message
 * with `prev` null is whole; otherwise `blocks` holds the blocks born (or
 * changed) since snapshot `prev` and `freed` the ones gone. Segments are
 * always whole.
 */
export interface IWireSnapshot {
  v: number;
  type: 'snapshot';
  seq: number;
  prev: number | null;
  reason: 'cell' | 'oom';
  cell_id: string | null;
  execution_count: number | null;
  error: string | null;
  /** The code the run's frames were compiled from (a replayed run's: the recording's); older helpers send none. */
  source?: string | null;
  frames: { base: number; items: [string, number, string][] };
  stacks: { base: number; items: number[][] };
  segments: {
    device: number[];
    address: number[];
    total_size: number[];
    stream: number[];
    pool: string[];
    /** 'large' or 'small'. */
    type?: string[];
    stack: number[];
    /** 1 for an expandable segment (older helpers leave it out). */
    expandable?: number[];
  };
  blocks: {
    segment: number[];
    address: number[];
    size: number[];
    requested_size: number[];
    state: number[];
    stack: number[];
  };
  freed?: { device: number[]; address: number[] };
  devices: IWireDeviceStats[];
  /** Allocated per device at the cell's start, measured by the kernel. */
  before?: IWireBefore[];
  /** The cell's peak allocated bytes: exact, or (not exact) the high-water mark it stayed under. */
  peak?: { bytes: number; exact: boolean };
  oom?: { device?: number; alloc?: number; device_free?: number; count?: number };
  replay?: string;
  capture_ms?: number;
  /** Allocation history since the previous capture, as columns (`action` indexes `actions`). */
  traces?: {
    actions: string[];
    device: number[];
    action: number[];
    address: number[];
    size: number[];
    time_us: number[];
    stack: number[];
  };
  /** Which stretch of history `traces` covers. */
  history?: { since_us: number | null; until_us: number | null; complete: boolean; dropped: number };
  /** What the live blocks are for after the cell (the kernel's role pass); engine/roles.ts reads it. */
  roles?: {
    bytes: Record<string, number>;
    partial: boolean;
    /** How long the live pass took; absent where a replayed export's roles are sent (no pass ran). */
    elapsed_ms?: number;
    reused?: boolean;
    /** Each allocated block's role, as letter runs in device and address order (engine/roles.ts parseBlockRuns). */
    blocks?: { count: number; runs: string };
  };
}

// Block states by their code in the block table (the helper's protocol.BLOCK_STATES).
const WIRE_STATES: readonly BlockState[] = WIRE_BLOCK_STATES;

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
  return (
    a.totalSize === b.totalSize &&
    a.stream === b.stream &&
    a.pool === b.pool &&
    a.stack === b.stack &&
    a.isExpandable === b.isExpandable
  );
}

/** A live block as the decoder keeps it between messages: by its segment's address, as indices change. */
type IKeptBlock = Omit<Block, 'segment'> & { readonly segmentAddress: number };

/** Decodes the snapshot messages one comm receives, whole or as changes. */
export class WireDecoder {
  constructor(readonly frames: FrameTable) {}

  /** Sequence number of the last snapshot decoded (null before the first). */
  get lastSeq(): number | null {
    return this._lastSeq;
  }

  /**
   * The snapshot a message describes. Throws SnapshotError when the message
   * does not follow what this decoder has (a lost message): the caller then
   * asks the kernel for everything again, with a new decoder.
   */
  decode(message: IWireSnapshot): Snapshot {
    const { frames, stacks, segments: s, blocks: b } = message;
    if (frames.base > this._frameIds.length || stacks.base > this._stackIds.length) {
      throw new SnapshotError(
        `snapshot message out of step: frames from ${frames.base}, expected ${this._frameIds.length}`
      );
    }
    if (message.prev !== null && message.prev !== this._lastSeq) {
      throw new SnapshotError(`snapshot message out of step: changes since ${message.prev}, have ${this._lastSeq}`);
    }
    // Frame and stack ids never change in a kernel: items already known are skipped.
    frames.items.forEach(([filename, line, name], i) => {
      if (frames.base + i === this._frameIds.length) {
        this._frameIds.push(this.frames.internFrame(name, filename, line));
      }
    });
    stacks.items.forEach((ids, i) => {
      if (stacks.base + i === this._stackIds.length) {
        this._stackIds.push(this.frames.internStack(ids.map(id => this._frame(id))));
      }
    });
    const order = s.address.map((_, i) => i).sort((x, y) => s.device[x] - s.device[y] || s.address[x] - s.address[y]);
    // Every number here is one the schema let through (capture/validate.ts): an integer up to 2^53 - 1.
    const position = new AddressMap<number>();
    const previousSegments = this._segments;
    this._segments = new AddressMap();
    const segments: Segment[] = order.map((i, k) => {
      position.set(s.device[i], s.address[i], k);
      const segment: Segment = {
        device: s.device[i],
        address: s.address[i],
        totalSize: s.total_size[i],
        stream: s.stream[i],
        segmentType: s.type?.[i] ?? '',
        pool: s.pool[i],
        isExpandable: s.expandable?.[i] === 1,
        stack: this._stack(s.stack[i])
      };
      return this._share(previousSegments, this._segments, segment, sameSegment);
    });
    const kept = message.prev === null ? new AddressMap<IKeptBlock>() : this._kept;
    if (message.freed) {
      const { device, address } = message.freed;
      address.forEach((a, i) => kept.delete(device[i], a));
    }
    b.address.forEach((address, i) => {
      const segment = s.device[b.segment[i]] === undefined ? undefined : b.segment[i];
      const state = WIRE_STATES[b.state[i]];
      if (segment === undefined || state === undefined) {
        throw new SnapshotError(`snapshot message block ${i} is malformed`);
      }
      kept.set(s.device[segment], address, {
        device: s.device[segment],
        address,
        size: b.size[i],
        requestedSize: b.requested_size[i],
        state,
        stack: this._stack(b.stack[i]),
        segmentAddress: s.address[segment]
      });
    });
    const previousBlocks = this._blocks;
    this._blocks = new AddressMap();
    const blocks: Block[] = [];
    for (const k of kept.values()) {
      const segment = position.get(k.device, k.segmentAddress);
      if (segment === undefined) {
        throw new SnapshotError(`snapshot message keeps a block at ${k.address} outside every segment`);
      }
      const block: Block = {
        device: k.device,
        address: k.address,
        size: k.size,
        requestedSize: k.requestedSize,
        state: k.state,
        stack: k.stack,
        segment
      };
      blocks.push(this._share(previousBlocks, this._blocks, block, sameBlock));
    }
    blocks.sort((x, y) => x.segment - y.segment || x.address - y.address);
    // The helper reads what torch wrote, or a recording it replays: one whose blocks overlap or leave their
    // segment is refused here as a file with them is, not shown with negative free memory.
    try {
      checkLayout(segments, blocks);
    } catch (reason) {
      // A replayed cell's layout is the recording's: the line names it, as a refused file is named.
      throw message.replay
        ? new SnapshotError(`the replayed recording ${message.replay}: ${(reason as Error).message}`)
        : reason;
    }
    this._kept = kept;
    this._lastSeq = message.seq;
    const deviceCount = message.devices.reduce((n, d) => Math.max(n, d.device + 1), 0);
    const snapshot: Snapshot = {
      segments,
      blocks,
      traces: this._traces(message),
      totals: computeTotals(segments, blocks, deviceCount),
      frames: this.frames
    };
    const h = message.history;
    if (h && message.traces) {
      const history: TraceHistory = { sinceUs: h.since_us, untilUs: h.until_us, complete: h.complete };
      return { ...snapshot, history };
    }
    return snapshot;
  }

  /** The message's trace entries (the cell's allocation history), oldest first. */
  private _traces(message: IWireSnapshot): TraceEntry[] {
    const t = message.traces;
    if (!t) {
      return [];
    }
    return t.device.map((device, i) => {
      const action = t.actions[t.action[i]];
      if (action === undefined) {
        throw new SnapshotError(`snapshot message trace entry ${i} names no action`);
      }
      const noAddress = action === 'oom' || action === 'snapshot';
      return {
        device,
        action,
        address: noAddress ? null : t.address[i],
        size: t.size[i],
        stream: 0,
        timeUs: t.time_us[i],
        stack: this._stack(t.stack[i]),
        userMetadata: '',
        deviceFree: null
      };
    });
  }

  /**
   * The previous snapshot's object when it is equal, so the snapshots of a
   * session share every block a cell did not touch (a store of 200 snapshots
   * of 40,000 blocks then holds about one copy of each block).
   */
  private _share<T extends { device: number; address: number }>(
    previous: AddressMap<T>,
    next: AddressMap<T>,
    item: T,
    same: (a: T, b: T) => boolean
  ): T {
    const old = previous.get(item.device, item.address);
    const kept = old !== undefined && same(old, item) ? old : item;
    next.set(item.device, item.address, kept);
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

  private _kept = new AddressMap<IKeptBlock>();
  private _lastSeq: number | null = null;
  private _segments = new AddressMap<Segment>();
  private _blocks = new AddressMap<Block>();
  private readonly _frameIds: number[] = [];
  private readonly _stackIds: number[] = [0];
}
