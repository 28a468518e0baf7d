/**
 * Raw snapshot dict (from a pickle or JSON) to the normalized model.
 *
 * Defensive across torch versions: 2.1+ blocks carry `address` and `frames`;
 * 2.0-era blocks carry neither (addresses follow from the segment address and
 * the sizes of the blocks before them, frames sit in `history`); trace entries
 * may lack `frames`; `oom` entries carry `device_free` instead of `addr`.
 */
import { checkEntryCount, DEFAULT_DECODE_LIMITS, IDecodeLimits, LimitError } from './budget';
import { checkBlocksApart, checkNoOverlap, checkSegmentEnd, MAX_EXACT, PAST_EXACT } from './consistency';
import { clip, NotebookError, SnapshotError } from './errors';
import { Block, BlockState, DeviceTotals, FrameTable, Segment, Snapshot, TraceEntry } from './model';
import { PyDict, PyValue, ownValue } from './pickle';

/** Frames kept per stack: deeper stacks are cut (real Python stacks are tens deep). */
export const MAX_FRAMES_PER_STACK = 4096;

// Trace actions that are about a block or segment, so torch writes its address (an `oom` entry has `device_free`).
const ADDRESSED_ACTIONS: ReadonlySet<string> = new Set([
  'alloc',
  'free',
  'free_requested',
  'free_completed',
  'segment_alloc',
  'segment_free',
  'segment_map',
  'segment_unmap'
]);
const BLOCK_STATES: ReadonlySet<string> = new Set(['active_allocated', 'active_pending_free', 'inactive']);

/**
 * Build the normalized snapshot; `frames` is shared when given. `decodedBytes`
 * (the pickle's size) lets the budget tell memo amplification from a big file.
 */
export function normalizeSnapshot(
  raw: PyValue,
  frames = new FrameTable(),
  limits: IDecodeLimits = DEFAULT_DECODE_LIMITS,
  decodedBytes = Number.POSITIVE_INFINITY
): Snapshot {
  return new Private.Normalizer(frames, limits, decodedBytes).run(raw);
}

namespace Private {
  export class Normalizer {
    constructor(
      readonly frames: FrameTable,
      readonly limits: IDecodeLimits,
      readonly decodedBytes: number
    ) {}

    run(raw: PyValue): Snapshot {
      let rawSegments: PyValue | undefined;
      let rawTraces: PyValue | undefined;
      if (Array.isArray(raw)) {
        // torch.cuda.memory_snapshot() returns the segment list alone.
        rawSegments = raw;
      } else if (isDict(raw)) {
        rawSegments = ownValue(raw, 'segments');
        rawTraces = ownValue(raw, 'device_traces');
      }
      if (!Array.isArray(rawSegments)) {
        // A notebook is JSON too, and the file people have at hand: "expected a 'segments' list" says nothing to them.
        if (isDict(raw) && ownValue(raw, 'nbformat') !== undefined && Array.isArray(ownValue(raw, 'cells'))) {
          throw new NotebookError();
        }
        throw new SnapshotError(
          "not a snapshot: expected a dict with a 'segments' list, as torch.cuda.memory._snapshot() returns"
        );
      }
      this._checkBudget(rawSegments, rawTraces);
      const parsed = rawSegments.map((s, i) => this._segment(s, i));
      parsed.sort((a, b) => a.segment.device - b.segment.device || a.segment.address - b.segment.address);
      checkNoOverlap(parsed.map(p => p.segment));
      const segments: Segment[] = [];
      const blocks: Block[] = [];
      for (let i = 0; i < parsed.length; i++) {
        segments.push(parsed[i].segment);
        for (const b of parsed[i].blocks) {
          (b as { segment: number }).segment = i;
          blocks.push(b);
        }
      }
      const traces = this._traces(rawTraces);
      const deviceCount = Array.isArray(rawTraces) ? rawTraces.length : undefined;
      return {
        segments,
        blocks,
        traces,
        totals: computeTotals(segments, blocks, deviceCount),
        ...(deviceCount === undefined ? {} : { deviceCount }),
        frames: this.frames
      };
    }

    /**
     * Count blocks and trace entries as the lists reference them (one segment
     * dict referenced 9,000 times counts 9,000 times) before building any,
     * and refuse more devices than the budget allows.
     */
    private _checkBudget(rawSegments: PyValue[], rawTraces: PyValue | undefined): void {
      const maxDevices = this.limits.maxDevices;
      if (Array.isArray(rawTraces) && rawTraces.length > maxDevices) {
        throw new LimitError(
          'maxDevices',
          `the snapshot has traces for ${rawTraces.length.toLocaleString('en-US')} devices`,
          maxDevices
        );
      }
      let count = 0;
      for (let i = 0; i < rawSegments.length; i++) {
        const seg = rawSegments[i];
        const blocks = isDict(seg) ? ownValue(seg, 'blocks') : undefined;
        count += Array.isArray(blocks) ? blocks.length : 0;
      }
      // Segments count too: each becomes an object.
      count += rawSegments.length;
      if (Array.isArray(rawTraces)) {
        for (const entries of rawTraces) {
          count += Array.isArray(entries) ? entries.length : 0;
        }
      }
      checkEntryCount(count, this.decodedBytes, this.limits);
    }

    private _segment(raw: PyValue, index: number): { segment: Segment; blocks: Block[] } {
      const where = `segment ${index}`;
      const seg = dict(raw, where);
      const device = int(ownValue(seg, 'device'), where, 'device', 0);
      if (device >= this.limits.maxDevices) {
        throw new LimitError('maxDevices', `${where} is on device ${device}`, this.limits.maxDevices);
      }
      const address = int(ownValue(seg, 'address'), where, 'address');
      const totalSize = int(ownValue(seg, 'total_size'), where, 'total_size');
      const segment: Segment = {
        device,
        address,
        totalSize,
        stream: stream(ownValue(seg, 'stream'), where),
        segmentType: str(ownValue(seg, 'segment_type'), ''),
        pool: poolId(ownValue(seg, 'segment_pool_id'), where),
        isExpandable: ownValue(seg, 'is_expandable') === true,
        stack: this._stack(ownValue(seg, 'frames'))
      };
      // Before any block is placed in it: each block's end is then exact, or outside the segment.
      checkSegmentEnd(segment, where);
      const rawBlocks = ownValue(seg, 'blocks');
      const blocks: Block[] = [];
      if (rawBlocks !== undefined && !Array.isArray(rawBlocks)) {
        throw new SnapshotError(`not a snapshot: ${where} blocks is not a list`);
      }
      let cursor = address;
      const bw = new Where(j => `${where} block ${j}`);
      for (let j = 0; j < (rawBlocks?.length ?? 0); j++) {
        bw.at = j;
        const b = dict((rawBlocks as PyValue[])[j], bw);
        const size = int(ownValue(b, 'size'), bw, 'size');
        const history = ownValue(b, 'history');
        const lastHistory =
          Array.isArray(history) && history.length && isDict(history[history.length - 1])
            ? (history[history.length - 1] as PyDict)
            : undefined;
        // Every torch writes a state; read as allocated, a missing or numeric one made up memory in use.
        const state = text(ownValue(b, 'state'), bw, 'state');
        if (!BLOCK_STATES.has(state)) {
          throw new SnapshotError(`not a snapshot: ${bw} has unknown state '${clip(state)}'`);
        }
        // 2.0-era blocks have no address: they tile the segment in order.
        const blockAddress = int(ownValue(b, 'address'), bw, 'address', cursor);
        cursor = blockAddress + size;
        if (blockAddress < address || cursor > address + totalSize) {
          // counted, it would make up memory the segment cannot hold
          throw new SnapshotError(`not a consistent snapshot: ${bw} lies outside its segment`);
        }
        const requested = ownValue(b, 'requested_size') ?? (lastHistory && ownValue(lastHistory, 'real_size'));
        blocks.push({
          device,
          address: blockAddress,
          size,
          requestedSize: int(requested, bw, 'requested_size', size),
          state: state as BlockState,
          stack: this._stack(ownValue(b, 'frames') ?? (lastHistory && ownValue(lastHistory, 'frames'))),
          segment: -1
        });
      }
      blocks.sort((x, y) => x.address - y.address);
      checkBlocksApart(segment, blocks);
      return { segment, blocks };
    }

    private _traces(raw: PyValue | undefined): TraceEntry[] {
      const out: TraceEntry[] = [];
      // None or absent: no history. Anything else but a list per device is not what torch writes, and is
      // refused as a bad trace entry is (read as no history, it would make every figure identity's silently).
      if (raw === undefined || raw === null) {
        return out;
      }
      if (!Array.isArray(raw)) {
        throw new SnapshotError('not a snapshot: device_traces is not a list (one list of trace entries per device)');
      }
      for (let device = 0; device < raw.length; device++) {
        const entries = raw[device];
        if (entries === null) {
          continue;
        }
        if (!Array.isArray(entries)) {
          throw new SnapshotError(`not a snapshot: device ${device}'s trace entries are not a list`);
        }
        const where = new Where(k => `device ${device} trace entry ${k}`);
        for (let k = 0; k < entries.length; k++) {
          where.at = k;
          const e = dict(entries[k], where);
          // Read as 'unknown', a missing or numeric action dropped the entry from every replay silently.
          const action = text(ownValue(e, 'action'), where, 'action');
          const addr = ownValue(e, 'addr');
          // Read as no address, an alloc or free would drop out of every replay and change its figures silently.
          if ((addr === undefined || addr === null) && ADDRESSED_ACTIONS.has(action)) {
            throw new SnapshotError(`not a snapshot: ${where} (${action}) has no addr`);
          }
          const deviceFree = ownValue(e, 'device_free');
          const time = ownValue(e, 'time_us');
          const meta = ownValue(e, 'user_metadata');
          out.push({
            device,
            action,
            address: addr === undefined || addr === null ? null : int(addr, where, 'addr'),
            size: int(ownValue(e, 'size'), where, 'size', 0),
            stream: stream(ownValue(e, 'stream'), where),
            timeUs: time === undefined || time === null ? null : num(time, where, 'time_us'),
            stack: this._stack(ownValue(e, 'frames')),
            // A label the user's code sets, always a string in torch, that no figure reads: anything else
            // (a dict, a list nested 200,000 deep) is dropped rather than refuse the file over it.
            userMetadata: typeof meta === 'string' ? meta : '',
            deviceFree: deviceFree === undefined || deviceFree === null ? null : int(deviceFree, where, 'device_free')
          });
        }
      }
      return out;
    }

    private _stack(raw: PyValue | undefined): number {
      if (!Array.isArray(raw) || raw.length === 0) {
        return 0;
      }
      // A list shared by many blocks (hostile or not) is interned once.
      const known = this._stackOfList.get(raw);
      if (known !== undefined) {
        return known;
      }
      const ids: number[] = [];
      const n = Math.min(raw.length, MAX_FRAMES_PER_STACK);
      for (let i = 0; i < n; i++) {
        const f = raw[i];
        if (!isDict(f)) {
          continue;
        }
        const line = ownValue(f, 'line');
        ids.push(
          this.frames.internFrame(
            str(ownValue(f, 'name'), '??'),
            str(ownValue(f, 'filename'), '??'),
            // Python's line numbers: a hostile file's NaN, float or negative line reads as unknown, 0.
            Number.isSafeInteger(line) && (line as number) >= 0 ? (line as number) : 0
          )
        );
      }
      const id = this.frames.internStack(ids);
      this._stackOfList.set(raw, id);
      return id;
    }

    private readonly _stackOfList = new Map<PyValue[], number>();
  }

  function isDict(v: PyValue | undefined): v is PyDict {
    return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
  }

  /**
   * Where a value sits, spelled out only for an error message: building the
   * text for every block and trace entry cost more than reading them.
   */
  export class Where {
    constructor(private readonly _text: (at: number) => string) {}
    at = 0;
    toString(): string {
      return this._text(this.at);
    }
  }

  function dict(v: PyValue, where: Where | string): PyDict {
    if (!isDict(v)) {
      throw new SnapshotError(`not a snapshot: ${where} is not a dict`);
    }
    return v;
  }

  function num(v: PyValue | undefined, at: Where | string, field: string): number {
    if (typeof v === 'number' && Number.isFinite(v)) {
      return v;
    }
    if (typeof v === 'bigint') {
      return Number(v);
    }
    throw new SnapshotError(`not a snapshot: ${at} ${field} is not a number`);
  }

  /**
   * An address, size or index: a safe non-negative integer (a negative size
   * or 1e300 would print as nonsense and break every sum after it). The
   * pickle reader keeps an integer past 2^53 - 1 exact, as a bigint, so the
   * refusal quotes the file's own digits.
   */
  function int(v: PyValue | undefined, at: Where | string, field: string, fallback?: number): number {
    if ((v === undefined || v === null) && fallback !== undefined) {
      return fallback;
    }
    if ((typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint') {
      if (v < 0) {
        throw new SnapshotError(`not a snapshot: ${at} ${field} is negative (${printableNumber(v)})`);
      }
      if (v <= MAX_EXACT) {
        return Number(v);
      }
      throw new SnapshotError(`not a snapshot: ${at} ${field} is out of range (${printableNumber(v)}): ${PAST_EXACT}`);
    }
    if (typeof v === 'number' && Number.isFinite(v)) {
      throw new SnapshotError(`not a snapshot: ${at} ${field} is not an integer (${v})`);
    }
    if (typeof v === 'number') {
      throw new SnapshotError(`not a snapshot: ${at} ${field} is out of range (${printableNumber(v)})`);
    }
    throw new SnapshotError(`not a snapshot: ${at} ${field} is ${v === undefined ? 'missing' : 'not an integer'}`);
  }

  /** A stream handle: any safe integer (PyTorch prints them signed or not), 0 when absent. */
  function stream(v: PyValue | undefined, at: Where | string): number {
    if (v === undefined || v === null) {
      return 0;
    }
    if (typeof v === 'number' && Number.isSafeInteger(v)) {
      return v;
    }
    throw new SnapshotError(`not a snapshot: ${at} stream is not a safe integer`);
  }

  function printableNumber(v: number | bigint): string {
    const text = String(v);
    return text.length > 24 ? `${text.slice(0, 12)}... (${text.length} digits)` : text;
  }

  /** Most integers in a pool id: torch writes two. */
  const MAX_POOL_ID_PARTS = 8;

  /**
   * A segment's pool as text: torch writes a pair of integers, (0, 0) for the
   * default pool. Anything else is refused by name rather than dropped, since
   * an export writes it back and would call it the default pool; joined as it
   * came, a dict threw and a list nested 200,000 deep overflowed the stack.
   */
  function poolId(v: PyValue | undefined, at: string): string {
    if (v === undefined || v === null) {
      return '';
    }
    const parts = Array.isArray(v) ? v : [v];
    if (parts.length > MAX_POOL_ID_PARTS || !parts.every(p => Number.isSafeInteger(p))) {
      throw new SnapshotError(`not a snapshot: ${at} segment_pool_id is not a tuple of integers`);
    }
    return parts.join(',');
  }

  /** A field torch always writes as a string (a block's state, an entry's action). */
  function text(v: PyValue | undefined, at: Where | string, field: string): string {
    if (typeof v === 'string') {
      return v;
    }
    throw new SnapshotError(`not a snapshot: ${at} ${field} is ${v === undefined ? 'missing' : 'not a string'}`);
  }

  function str(v: PyValue | undefined, fallback: string): string {
    return typeof v === 'string' ? v : fallback;
  }
}

/** Per-device totals from segments and blocks, both sorted by device and address. */
export function computeTotals(segments: readonly Segment[], blocks: readonly Block[], deviceCount = 0): DeviceTotals[] {
  type Acc = {
    -readonly [K in keyof DeviceTotals]: DeviceTotals[K];
  };
  const byDevice = new Map<number, Acc>();
  const acc = (device: number): Acc => {
    let t = byDevice.get(device);
    if (!t) {
      t = {
        device,
        allocatedBytes: 0,
        activeBytes: 0,
        reservedBytes: 0,
        inactiveBytes: 0,
        largestFreeBytes: 0,
        activeBlocks: 0,
        allocatedBlocks: 0,
        segments: 0
      };
      byDevice.set(device, t);
    }
    return t;
  };
  for (let d = 0; d < deviceCount; d++) {
    acc(d);
  }
  let b = 0;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const t = acc(seg.device);
    t.reservedBytes += seg.totalSize;
    t.segments++;
    let cursor = seg.address;
    let freeRun = 0;
    let segActive = 0;
    // Free space is inactive blocks plus any range no block covers.
    for (; b < blocks.length && blocks[b].segment === i; b++) {
      const block = blocks[b];
      if (block.address > cursor) {
        freeRun += block.address - cursor;
      }
      cursor = Math.max(cursor, block.address + block.size);
      if (block.state === 'inactive') {
        freeRun += block.size;
        continue;
      }
      t.largestFreeBytes = Math.max(t.largestFreeBytes, freeRun);
      freeRun = 0;
      segActive += block.size;
      t.activeBytes += block.size;
      t.activeBlocks++;
      if (block.state === 'active_allocated') {
        t.allocatedBytes += block.size;
        t.allocatedBlocks++;
      }
    }
    freeRun += Math.max(0, seg.address + seg.totalSize - cursor);
    t.largestFreeBytes = Math.max(t.largestFreeBytes, freeRun);
    t.inactiveBytes += seg.totalSize - segActive;
  }
  return [...byDevice.values()].sort((x, y) => x.device - y.device);
}
