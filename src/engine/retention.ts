/**
 * Which execution allocated each live block, and what each execution still
 * holds: the facts the leak finder ranks. A block belongs to the execution
 * between whose snapshots it first appeared (same device, address, size and
 * stack) and stays attributed while it remains in every later snapshot.
 *
 * Identity alone cannot see a block freed and allocated again at the same
 * address by the same line (a re-run cell rebuilding its tensors). When the
 * snapshots carry allocation history, the last `alloc` event of each live
 * block, placed between the snapshots' own `snapshot` events, decides instead.
 */
import { diffSnapshots } from './diff';
import { Block, Snapshot } from './model';
import { emptySnapshot } from './snapshot';

/** What one execution's allocations became by the last snapshot. */
export interface IExecutionRetention {
  /** Position of the execution (its snapshot) in the sequence. */
  readonly execution: number;
  /** Bytes of blocks born during the execution. */
  readonly bornBytes: number;
  /** Of those, bytes still alive in the last snapshot. */
  readonly aliveBytes: number;
  /** Of those, bytes freed by a later execution (or the same one's end). */
  readonly freedLaterBytes: number;
  /** The blocks still alive in the last snapshot. */
  readonly alive: readonly Block[];
}

/**
 * Retention per execution for snapshots taken after consecutive executions
 * (all sharing one FrameTable); the first is compared with an empty device.
 */
export function retentionByExecution(snapshots: readonly Snapshot[]): IExecutionRetention[] {
  if (!snapshots.length) {
    return [];
  }
  const frames = snapshots[0].frames;
  // owner: block identity key -> execution that allocated it, for blocks alive now
  let owner = new Map<string, number>();
  const born = snapshots.map(() => 0);
  const key = (b: Block) => `${b.device}:${b.address}:${b.size}:${b.stack}`;
  let previous = emptySnapshot(frames);
  snapshots.forEach((snapshot, k) => {
    const diff = diffSnapshots(previous, snapshot);
    const next = new Map(owner);
    for (const b of diff.freed) {
      next.delete(key(b));
    }
    for (const b of diff.born) {
      next.set(key(b), k);
      born[k] += b.size;
    }
    owner = next;
    previous = snapshot;
  });
  const fromTrace = traceOwners(snapshots);
  const alive = snapshots.map((): Block[] => []);
  for (const b of previous.blocks) {
    const byIdentity = owner.get(key(b));
    const k = fromTrace?.(b) ?? byIdentity;
    if (k === undefined || b.state !== 'active_allocated') {
      continue;
    }
    if (byIdentity !== undefined && k !== byIdentity) {
      // Freed and allocated again in place: a birth identity could not see.
      born[k] += b.size;
    }
    alive[k].push(b);
  }
  return snapshots.map((_, k) => {
    const aliveBytes = alive[k].reduce((n, b) => n + b.size, 0);
    return { execution: k, bornBytes: born[k], aliveBytes, freedLaterBytes: born[k] - aliveBytes, alive: alive[k] };
  });
}

/**
 * Owner by allocation history, or null when the snapshots lack it. Each
 * `_snapshot()` call records a `snapshot` event that the next snapshot's
 * trace holds, so execution k ends at the newest such event in snapshot
 * k+1; the last snapshot's trace says when each live block was last allocated.
 */
function traceOwners(snapshots: readonly Snapshot[]): ((b: Block) => number | undefined) | null {
  const newestMark = (s: Snapshot): number | null => {
    let t: number | null = null;
    for (const e of s.traces) {
      if (e.action === 'snapshot' && e.timeUs !== null) {
        t = e.timeUs;
      }
    }
    return t;
  };
  const bounds: number[] = [];
  for (let k = 1; k < snapshots.length; k++) {
    const t = newestMark(snapshots[k]);
    if (t === null) {
      return null;
    }
    bounds.push(t);
  }
  bounds.push(Infinity);
  const last = snapshots[snapshots.length - 1];
  let earliest = Infinity;
  const allocated = new Map<string, number>();
  for (const e of last.traces) {
    if (e.timeUs === null) {
      continue;
    }
    earliest = Math.min(earliest, e.timeUs);
    if (e.action === 'alloc' && e.address !== null) {
      allocated.set(`${e.device}:${e.address}:${e.size}`, e.timeUs);
    }
  }
  return b => {
    const t = allocated.get(`${b.device}:${b.address}:${b.size}`);
    // An allocation at the trace's very start may be older than the ring buffer: let identity decide.
    if (t === undefined || t <= earliest) {
      return undefined;
    }
    const k = bounds.findIndex(bound => t <= bound);
    return k < 0 ? undefined : k;
  };
}
