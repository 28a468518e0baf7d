/**
 * Moving a normalized snapshot between the engine worker and the page, and
 * between frame tables. A snapshot crosses as plain data (structured clone
 * keeps no class), without its trace: the trace stays in the worker, which
 * answers the timeline's questions about it. Its blocks cross as one array of
 * numbers, moved without a copy: cloning tens of thousands of block objects
 * would be one long task on the page (100-130 ms for the 40,501 blocks of the
 * real many_blocks recording).
 */
import { Block, BlockState, DeviceTotals, Frame, FrameTable, Segment, Snapshot } from './model';

/** Numbers per block in an encoded block array: device, address, size, requested size, state, stack, segment. */
const BLOCK_FIELDS = 7;
const STATES: readonly BlockState[] = ['active_allocated', 'active_pending_free', 'inactive'];

/** Blocks as one array of numbers (addresses and sizes are safe integers, exact in a double). */
export function encodeBlocks(blocks: readonly Block[]): Float64Array {
  const out = new Float64Array(blocks.length * BLOCK_FIELDS);
  blocks.forEach((b, i) => {
    const o = i * BLOCK_FIELDS;
    out[o] = b.device;
    out[o + 1] = b.address;
    out[o + 2] = b.size;
    out[o + 3] = b.requestedSize;
    out[o + 4] = STATES.indexOf(b.state);
    out[o + 5] = b.stack;
    out[o + 6] = b.segment;
  });
  return out;
}

/** The blocks of `encodeBlocks` again. */
export function decodeBlocks(data: Float64Array): Block[] {
  const blocks: Block[] = [];
  for (let o = 0; o < data.length; o += BLOCK_FIELDS) {
    blocks.push({
      device: data[o],
      address: data[o + 1],
      size: data[o + 2],
      requestedSize: data[o + 3],
      state: STATES[data[o + 4]],
      stack: data[o + 5],
      segment: data[o + 6]
    });
  }
  return blocks;
}

/** A snapshot as plain data: blocks and segments, and the frame table their stack ids index. */
export interface ISnapshotTransfer {
  readonly segments: readonly Segment[];
  /** The blocks, encoded by `encodeBlocks`; move its buffer rather than copy it. */
  readonly blocks: Float64Array;
  readonly totals: readonly DeviceTotals[];
  /** Devices the process saw, where the file says (see Snapshot.deviceCount). */
  readonly deviceCount?: number;
  readonly frames: readonly Frame[];
  /** Stacks by id (frame ids, innermost first); stack 0 is the empty one. */
  readonly stacks: readonly (readonly number[])[];
}

/** The snapshot as plain data, its trace left out. */
export function toTransfer(snapshot: Snapshot): ISnapshotTransfer {
  const table = snapshot.frames;
  const frames: Frame[] = [];
  for (let i = 0; i < table.frameCount; i++) {
    frames.push(table.frame(i));
  }
  const stacks: (readonly number[])[] = [];
  for (let i = 0; i < table.stackCount; i++) {
    stacks.push(table.stack(i));
  }
  return {
    segments: snapshot.segments,
    blocks: encodeBlocks(snapshot.blocks),
    totals: snapshot.totals,
    ...Private.deviceCountOf(snapshot),
    frames,
    stacks
  };
}

/** The snapshot again, in a frame table of its own whose ids are the transfer's. */
export function fromTransfer(data: ISnapshotTransfer): Snapshot {
  const table = new FrameTable();
  // Interning in id order gives every frame and stack the id it had.
  for (const f of data.frames) {
    table.internFrame(f.name, f.filename, f.line);
  }
  for (let i = 1; i < data.stacks.length; i++) {
    table.internStack([...data.stacks[i]]);
  }
  return {
    segments: data.segments,
    blocks: decodeBlocks(data.blocks),
    traces: [],
    totals: data.totals,
    ...Private.deviceCountOf(data),
    frames: table
  };
}

/**
 * The same snapshot in another frame table (the panel's, shared with the
 * notebook's snapshots), so it can be diffed against them.
 */
export function reframe(snapshot: Snapshot, frames: FrameTable): Snapshot {
  if (snapshot.frames === frames) {
    return snapshot;
  }
  const from = snapshot.frames;
  const stackIds = new Map<number, number>();
  const stackIn = (id: number): number => {
    let mapped = stackIds.get(id);
    if (mapped === undefined) {
      mapped = frames.internStack(
        from.stack(id).map(f => {
          const frame = from.frame(f);
          return frames.internFrame(frame.name, frame.filename, frame.line);
        })
      );
      stackIds.set(id, mapped);
    }
    return mapped;
  };
  const blocks = snapshot.blocks.map(b => ({ ...b, stack: stackIn(b.stack) }));
  const segments = snapshot.segments.map(s => ({ ...s, stack: stackIn(s.stack) }));
  return { segments, blocks, traces: [], totals: snapshot.totals, ...Private.deviceCountOf(snapshot), frames };
}

namespace Private {
  /** The device count as a field to spread, left out where the file did not say (as the model leaves it). */
  export function deviceCountOf(from: { readonly deviceCount?: number }): { deviceCount?: number } {
    return from.deviceCount === undefined ? {} : { deviceCount: from.deviceCount };
  }
}
