/**
 * The timeline of a snapshot file that carries trace entries: allocated
 * memory after each allocation event of one device, the cell boundaries the
 * trace records (every `_snapshot()` appends a `snapshot` entry, and the
 * kernel helper takes one after each cell), and the blocks alive at any
 * moment, for diffing two moments. Pure functions over the normalized
 * snapshot; the engine worker runs them, the view draws their output.
 */
import { Block, DeviceTotals, isAllocated, Snapshot, TraceEntry } from './model';
import { oomEntry } from './oom';

/** Trace actions that change allocated memory. */
const ALLOC = 'alloc';
const FREE = 'free_completed';
/** The trace action that marks a snapshot, which the kernel helper takes after each cell. */
const BOUNDARY = 'snapshot';
/** The trace action of an allocation that failed: the device ran out of memory. */
const OOM = 'oom';

/** Where an allocation failed: after `at` events (an event count, as boundaries are), asking for `bytes` (0: unknown). */
export interface ITimelineOom {
  readonly at: number;
  readonly bytes: number;
}

/** Allocated memory over one device's allocation events. */
export interface ITimeline {
  readonly device: number;
  /** Index in `snapshot.traces` of each event (alloc and free_completed only). */
  readonly events: Int32Array;
  /** Allocated bytes on the device right after each event. */
  readonly bytes: Float64Array;
  /** The block size each event allocated or freed. */
  readonly sizes: Float64Array;
  /** Positions (event counts) where the trace marks a snapshot: cell boundaries. */
  readonly boundaries: readonly number[];
  /** Where the trace records an out-of-memory error on the device, in order. */
  readonly ooms: readonly ITimelineOom[];
  /** The highest allocated total, and the event where it was reached. */
  readonly peakBytes: number;
  readonly peakEvent: number;
  /** Blocks alive before the first event (allocated before the trace begins), by address. */
  readonly initial: ReadonlyMap<number, ILiveBlock>;
}

/** A block alive at a moment: its size and the stack that allocated it. */
export interface ILiveBlock {
  readonly size: number;
  readonly stack: number;
}

/** What the view draws: at most `width` columns, each the lowest and highest total in its events. */
export interface ITimelineSeries {
  readonly device: number;
  readonly eventCount: number;
  /** First event of each column. */
  readonly start: Float64Array;
  readonly low: Float64Array;
  readonly high: Float64Array;
  readonly boundaries: readonly number[];
  readonly ooms: readonly ITimelineOom[];
  readonly peakBytes: number;
  readonly peakEvent: number;
}

/**
 * The timeline of the device whose allocation failed last (a file written at
 * an OOM is read for that device), else of the device with the most
 * allocation events; null when the snapshot carries no alloc or free events
 * (history was off).
 */
export function buildTimeline(snapshot: Snapshot): ITimeline | null {
  const counts = new Map<number, number>();
  for (const e of snapshot.traces) {
    if (e.action === ALLOC || e.action === FREE) {
      counts.set(e.device, (counts.get(e.device) ?? 0) + 1);
    }
  }
  if (!counts.size) {
    return null;
  }
  const failed = oomEntry(snapshot.traces, 'newest');
  const device =
    failed !== null && counts.has(failed.device)
      ? failed.device
      : [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0][0];
  const traces = snapshot.traces;
  const n = counts.get(device)!;
  const events = new Int32Array(n);
  const sizes = new Float64Array(n);
  const boundaries: number[] = [];
  const ooms: ITimelineOom[] = [];
  // Pass 1: which blocks were alive before the trace began. A free of an
  // address the trace never touched was one; so is a block still allocated
  // at the end that no event allocated. torch records one free per
  // allocation: an alloc at an address still allocated, or a second free,
  // is a file that contradicts itself and is not counted (else the total
  // would go below zero or past what the device held).
  const live = new Map<number, number>();
  const initial = new Map<number, ILiveBlock>();
  const seen = new Set<number>();
  let k = 0;
  for (let i = 0; i < traces.length; i++) {
    const e = traces[i];
    if (e.device !== device) {
      continue;
    }
    if (e.action === BOUNDARY) {
      boundaries.push(k);
    } else if (e.action === OOM) {
      ooms.push({ at: k, bytes: e.size });
    } else if (e.address === null) {
      continue;
    } else if (e.action === ALLOC) {
      if (live.has(e.address)) {
        continue;
      }
      live.set(e.address, k);
      seen.add(e.address);
      sizes[k] = blockSize(e.size);
      events[k++] = i;
    } else if (e.action === FREE) {
      const allocated = live.get(e.address);
      if (allocated !== undefined) {
        live.delete(e.address);
        sizes[k] = sizes[allocated];
      } else if (!seen.has(e.address)) {
        seen.add(e.address);
        initial.set(e.address, { size: blockSize(e.size), stack: e.stack });
        sizes[k] = blockSize(e.size);
      } else {
        continue;
      }
      events[k++] = i;
    }
  }
  const counted = k;
  // The snapshot knows the exact size of what is still allocated (the
  // allocator may leave a block unsplit, larger than the rounded request).
  const finalBlocks = snapshot.blocks.filter(b => b.device === device && isAllocated(b));
  for (const b of finalBlocks) {
    const allocated = live.get(b.address);
    if (allocated === undefined) {
      initial.set(b.address, { size: b.size, stack: b.stack });
    } else {
      sizes[allocated] = b.size;
    }
  }
  let base = 0;
  initial.forEach(b => (base += b.size));
  const bytes = new Float64Array(counted);
  let total = base;
  let peakBytes = base;
  let peakEvent = -1;
  for (let j = 0; j < counted; j++) {
    total += traces[events[j]].action === ALLOC ? sizes[j] : -sizes[j];
    bytes[j] = total;
    if (total > peakBytes) {
      peakBytes = total;
      peakEvent = j;
    }
  }
  return {
    device,
    events: events.subarray(0, counted),
    bytes,
    sizes: sizes.subarray(0, counted),
    boundaries,
    ooms,
    peakBytes,
    peakEvent,
    initial
  };
}

/**
 * The block size of a request as the caching allocator rounds it with its
 * default settings (at least 512 bytes, in multiples of 512): trace entries
 * record the requested size, memory_allocated counts blocks.
 */
export function blockSize(requested: number): number {
  return requested < 512 ? 512 : Math.ceil(requested / 512) * 512;
}

/** The timeline in at most `width` columns (min and max of each), for drawing. */
export function timelineSeries(timeline: ITimeline, width: number): ITimelineSeries {
  const n = timeline.bytes.length;
  const columns = Math.max(1, Math.min(n, Math.floor(width)));
  const start = new Float64Array(columns);
  const low = new Float64Array(columns);
  const high = new Float64Array(columns);
  for (let c = 0; c < columns; c++) {
    const from = Math.floor((c * n) / columns);
    const to = Math.max(from + 1, Math.floor(((c + 1) * n) / columns));
    let lo = Infinity;
    let hi = -Infinity;
    for (let j = from; j < to; j++) {
      const v = timeline.bytes[j];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    start[c] = from;
    low[c] = lo;
    high[c] = hi;
  }
  return {
    device: timeline.device,
    eventCount: n,
    start,
    low,
    high,
    boundaries: timeline.boundaries,
    ooms: timeline.ooms,
    peakBytes: timeline.peakBytes,
    peakEvent: timeline.peakEvent
  };
}

/**
 * The snapshot at a moment: the device's blocks alive right after event
 * `moment` (-1: before the first event), each with the stack that allocated
 * it, in the snapshot's frame table. No segments: the trace does not say
 * which segment held each block then.
 */
export function snapshotAt(snapshot: Snapshot, timeline: ITimeline, moment: number): Snapshot {
  const live = new Map(timeline.initial);
  const traces = snapshot.traces;
  const last = Math.min(moment, timeline.events.length - 1);
  for (let j = 0; j <= last; j++) {
    const e = traces[timeline.events[j]];
    if (e.action === ALLOC) {
      live.set(e.address!, { size: timeline.sizes[j], stack: e.stack });
    } else {
      live.delete(e.address!);
    }
  }
  const blocks: Block[] = [...live.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([address, b]) => ({
      device: timeline.device,
      address,
      size: b.size,
      requestedSize: b.size,
      state: 'active_allocated',
      stack: b.stack,
      segment: -1
    }));
  let allocated = 0;
  for (const b of blocks) {
    allocated += b.size;
  }
  const totals: DeviceTotals = {
    device: timeline.device,
    allocatedBytes: allocated,
    activeBytes: allocated,
    reservedBytes: 0,
    inactiveBytes: 0,
    largestFreeBytes: 0,
    activeBlocks: blocks.length,
    allocatedBlocks: blocks.length,
    segments: 0
  };
  return { segments: [], blocks, traces: [], totals: [totals], frames: snapshot.frames };
}

/** The trace entry of an event, for the view's hover. */
export function eventEntry(snapshot: Snapshot, timeline: ITimeline, moment: number): TraceEntry | null {
  const j = Math.max(0, Math.min(moment, timeline.events.length - 1));
  return timeline.events.length ? snapshot.traces[timeline.events[j]] : null;
}
