/**
 * Moving a normalized snapshot between the engine worker and the page, and
 * between frame tables. A snapshot crosses as plain data (structured clone
 * keeps no class), without its trace: the trace stays in the worker, which
 * answers the timeline's questions about it.
 */
import { Block, DeviceTotals, Frame, FrameTable, Segment, Snapshot } from './model';

/** A snapshot as plain data: blocks and segments, and the frame table their stack ids index. */
export interface ISnapshotTransfer {
  readonly segments: readonly Segment[];
  readonly blocks: readonly Block[];
  readonly totals: readonly DeviceTotals[];
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
  return { segments: snapshot.segments, blocks: snapshot.blocks, totals: snapshot.totals, frames, stacks };
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
  return { segments: data.segments, blocks: data.blocks, traces: [], totals: data.totals, frames: table };
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
  return { segments, blocks, traces: [], totals: snapshot.totals, frames };
}
