/**
 * Which execution allocated each live block, and what became of it: the facts
 * the leak finder ranks. A block belongs to the execution between whose
 * snapshots it first appeared (same device, address, size and stack) and
 * stays attributed while it remains in every later snapshot.
 *
 * Identity alone cannot see a block freed and allocated again at the same
 * address by the same line (a re-run cell rebuilding its tensors). When a
 * snapshot carries allocation history, its `alloc` events after its newest
 * `snapshot` event (the previous capture) belong to the execution it closes,
 * so a live block allocated there is reborn in that execution.
 */
import { diffSnapshots } from './diff';
import { Block, isAllocated, Snapshot } from './model';
import { emptySnapshot } from './snapshot';

/** What one execution's allocations became. */
export interface IExecutionRetention {
  /** Position of the execution (its snapshot) in the sequence. */
  readonly execution: number;
  /** Blocks born during the execution and alive when it ended (in its own snapshot). */
  readonly left: readonly Block[];
  readonly leftBytes: number;
  /** Of the blocks left, bytes still alive in the last snapshot. */
  readonly aliveBytes: number;
  /** Of the blocks left, bytes freed by later executions. */
  readonly freedLaterBytes: number;
  /** The blocks still alive in the last snapshot. */
  readonly alive: readonly Block[];
  /** Bytes of the blocks left that each later execution freed (execution -> bytes). */
  readonly freedBy: ReadonlyMap<number, number>;
}

/**
 * Retention per execution for snapshots taken after consecutive executions
 * (all sharing one FrameTable); the first is compared with an empty device.
 */
export function retentionByExecution(snapshots: readonly Snapshot[]): IExecutionRetention[] {
  if (!snapshots.length) {
    return [];
  }
  const key = (b: Block) => `${b.device}:${b.address}:${b.size}:${b.stack}`;
  const owner = new Map<string, number>();
  const left = snapshots.map((): Block[] => []);
  const freedBy = snapshots.map(() => new Map<number, number>());
  const release = (b: Block, k: number) => {
    const o = owner.get(key(b));
    if (o !== undefined) {
      freedBy[o].set(k, (freedBy[o].get(k) ?? 0) + b.size);
      owner.delete(key(b));
    }
  };
  let previous = emptySnapshot(snapshots[0].frames);
  snapshots.forEach((snapshot, k) => {
    const diff = diffSnapshots(previous, snapshot);
    for (const b of diff.freed) {
      release(b, k);
    }
    const reborn = allocatedSinceLastCapture(snapshot);
    for (const b of snapshot.blocks) {
      if (!isAllocated(b)) {
        continue;
      }
      const o = owner.get(key(b));
      if (o === undefined || (o < k && reborn?.has(`${b.device}:${b.address}:${b.size}`))) {
        if (o !== undefined) {
          release(b, k);
        }
        owner.set(key(b), k);
        left[k].push(b);
      }
    }
    previous = snapshot;
  });
  const alive = snapshots.map((): Block[] => []);
  for (const b of previous.blocks) {
    const o = isAllocated(b) ? owner.get(key(b)) : undefined;
    if (o !== undefined) {
      alive[o].push(b);
    }
  }
  return snapshots.map((_, k) => {
    const leftBytes = sizeOf(left[k]);
    const aliveBytes = sizeOf(alive[k]);
    return {
      execution: k,
      left: left[k],
      leftBytes,
      aliveBytes,
      freedLaterBytes: leftBytes - aliveBytes,
      alive: alive[k],
      freedBy: freedBy[k]
    };
  });
}

/** Bytes of a retention's blocks still alive after execution `at` (at >= its own execution). */
export function aliveBytesAt(retention: IExecutionRetention, at: number): number {
  let freed = 0;
  for (const [k, bytes] of retention.freedBy) {
    if (k <= at) {
      freed += bytes;
    }
  }
  return retention.leftBytes - freed;
}

function sizeOf(blocks: readonly Block[]): number {
  return blocks.reduce((n, b) => n + b.size, 0);
}

/**
 * `device:address:size` of the blocks allocated after the newest `snapshot`
 * event of their device's history (each device records its own), or null
 * when no device has one (no history, the first capture, or a ring buffer
 * that dropped the mark): then identity alone decides.
 */
function allocatedSinceLastCapture(snapshot: Snapshot): Set<string> | null {
  const lastMark = new Map<number, number>();
  snapshot.traces.forEach((e, i) => {
    if (e.action === 'snapshot') {
      lastMark.set(e.device, i);
    }
  });
  if (!lastMark.size) {
    return null;
  }
  const out = new Set<string>();
  snapshot.traces.forEach((e, i) => {
    const mark = lastMark.get(e.device);
    if (mark !== undefined && i > mark && e.action === 'alloc' && e.address !== null) {
      out.add(`${e.device}:${e.address}:${e.size}`);
    }
  });
  return out;
}
