/**
 * A session's snapshots as a few typed arrays, to rank its leaks in the
 * engine worker: the page copies blocks into numbers (cheap, and moved to the
 * worker without a copy) instead of having postMessage clone tens of
 * thousands of objects on the main thread. Only what ranking reads is kept:
 * blocks, the trace entries that mark captures and allocations, totals and
 * the frame table.
 */
import { DeviceTotals, FrameTable, Snapshot, TraceEntry, TraceHistory } from '../model';
import { decodeBlocks, encodeBlocks } from '../transfer';

/**
 * Numbers per trace entry: action, device, address (NaN: none), size, stack,
 * time in µs (NaN: none; exact in a double until the year 2255). The times
 * place a file's history against the snapshot before it (historyBetween).
 */
const TRACE_FIELDS = 6;
// Retention reads only these actions; the rest travel as 'other'.
const ACTIONS = ['alloc', 'snapshot', 'free_requested', 'free_completed', 'other'] as const;

/** One snapshot, encoded. */
export interface IEncodedSnapshot {
  readonly blocks: Float64Array;
  readonly traces: Float64Array;
  readonly totals: readonly DeviceTotals[];
  /** A live snapshot's stretch of history, which links it to the capture before it. */
  readonly history?: TraceHistory;
}

/** A session's snapshots and their frame table, encoded. */
export interface IEncodedSession {
  readonly frames: readonly (readonly [string, string, number])[];
  readonly stacks: readonly (readonly number[])[];
  readonly snapshots: readonly IEncodedSnapshot[];
}

/** Encode one snapshot (its frame table travels once per session, see `encodeFrames`). */
export function encodeSnapshot(snapshot: Snapshot): IEncodedSnapshot {
  const blocks = encodeBlocks(snapshot.blocks);
  const traces = new Float64Array(snapshot.traces.length * TRACE_FIELDS);
  snapshot.traces.forEach((e, i) => {
    const o = i * TRACE_FIELDS;
    const action = ACTIONS.indexOf(e.action as (typeof ACTIONS)[number]);
    traces[o] = action < 0 ? ACTIONS.length - 1 : action;
    traces[o + 1] = e.device;
    traces[o + 2] = e.address ?? NaN;
    traces[o + 3] = e.size;
    traces[o + 4] = e.stack;
    traces[o + 5] = e.timeUs ?? NaN;
  });
  return { blocks, traces, totals: snapshot.totals, ...(snapshot.history ? { history: snapshot.history } : {}) };
}

/** The frame table as plain arrays. */
export function encodeFrames(table: FrameTable): Pick<IEncodedSession, 'frames' | 'stacks'> {
  const frames: [string, string, number][] = [];
  for (let i = 0; i < table.frameCount; i++) {
    const f = table.frame(i);
    frames.push([f.name, f.filename, f.line]);
  }
  const stacks: (readonly number[])[] = [];
  for (let i = 0; i < table.stackCount; i++) {
    stacks.push(table.stack(i));
  }
  return { frames, stacks };
}

/** The buffers of an encoded session, to move rather than copy. */
export function sessionBuffers(session: IEncodedSession): ArrayBuffer[] {
  return session.snapshots.flatMap(s => [s.blocks.buffer as ArrayBuffer, s.traces.buffer as ArrayBuffer]);
}

/** The snapshots back, sharing one frame table whose ids are the page's. */
export function decodeSession(session: IEncodedSession): Snapshot[] {
  const table = new FrameTable();
  session.frames.forEach(([name, filename, line]) => table.internFrame(name, filename, line));
  // Stack 0 is the empty stack in every table; the rest come in the page's order.
  session.stacks.slice(1).forEach(ids => table.internStack([...ids]));
  return session.snapshots.map(s => decodeSnapshot(s, table));
}

function decodeSnapshot(s: IEncodedSnapshot, frames: FrameTable): Snapshot {
  const blocks = decodeBlocks(s.blocks);
  const traces: TraceEntry[] = [];
  for (let o = 0; o < s.traces.length; o += TRACE_FIELDS) {
    const address = s.traces[o + 2];
    const time = s.traces[o + 5];
    traces.push({
      device: s.traces[o + 1],
      action: ACTIONS[s.traces[o]],
      address: Number.isNaN(address) ? null : address,
      size: s.traces[o + 3],
      stream: 0,
      timeUs: Number.isNaN(time) ? null : time,
      stack: s.traces[o + 4],
      userMetadata: '',
      deviceFree: null
    });
  }
  return { segments: [], blocks, traces, totals: s.totals, frames, ...(s.history ? { history: s.history } : {}) };
}
