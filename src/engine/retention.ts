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
  const owner = new BlockOwners();
  const left = snapshots.map((): Block[] => []);
  const freedBy = snapshots.map(() => new Map<number, number>());
  const release = (b: Block, k: number) => {
    const o = owner.take(b);
    if (o !== undefined) {
      freedBy[o].set(k, (freedBy[o].get(k) ?? 0) + b.size);
    }
  };
  let previous = emptySnapshot(snapshots[0].frames);
  snapshots.forEach((snapshot, k) => {
    // Only what the diff or the history says changed is touched: kept blocks keep their owner.
    const diff = diffSnapshots(previous, snapshot);
    for (const b of diff.freed) {
      release(b, k);
    }
    const adopt = (b: Block) => {
      owner.set(b, k);
      left[k].push(b);
    };
    diff.born.forEach(adopt);
    const reborn = allocatedSinceLastCapture(snapshot);
    if (reborn) {
      for (const b of snapshot.blocks) {
        if (reborn.get(b.device)?.get(b.address) === b.size && isAllocated(b)) {
          const o = owner.get(b);
          if (o !== undefined && o < k) {
            release(b, k);
            adopt(b);
          }
        }
      }
    }
    previous = snapshot;
  });
  const alive = snapshots.map((): Block[] => []);
  for (const b of previous.blocks) {
    const o = isAllocated(b) ? owner.get(b) : undefined;
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

/**
 * Which execution owns each live block, by identity (device, address, size,
 * stack). Keyed by numbers, not strings: it is updated for every block born
 * or freed in a session.
 */
class BlockOwners {
  /** The owner of a block with this identity, if any. */
  get(b: Block): number | undefined {
    const e = this._byDevice.get(b.device)?.get(b.address);
    return e && e.size === b.size && e.stack === b.stack ? e.execution : undefined;
  }

  set(b: Block, execution: number): void {
    let device = this._byDevice.get(b.device);
    if (!device) {
      device = new Map();
      this._byDevice.set(b.device, device);
    }
    device.set(b.address, { size: b.size, stack: b.stack, execution });
  }

  /** Remove the block's entry and return its owner, if it had one. */
  take(b: Block): number | undefined {
    const o = this.get(b);
    if (o !== undefined) {
      this._byDevice.get(b.device)!.delete(b.address);
    }
    return o;
  }

  private readonly _byDevice = new Map<number, Map<number, { size: number; stack: number; execution: number }>>();
}

function sizeOf(blocks: readonly Block[]): number {
  return blocks.reduce((n, b) => n + b.size, 0);
}

/**
 * Address -> size, per device, of the blocks allocated after the newest
 * `snapshot` event of their device's history (each device records its own),
 * or null when no device has one (no history, the first capture, or a ring
 * buffer that dropped the mark): then identity alone decides.
 */
function allocatedSinceLastCapture(snapshot: Snapshot): Map<number, Map<number, number>> | null {
  const lastMark = new Map<number, number>();
  snapshot.traces.forEach((e, i) => {
    if (e.action === 'snapshot') {
      lastMark.set(e.device, i);
    }
  });
  if (!lastMark.size) {
    return null;
  }
  const out = new Map<number, Map<number, number>>();
  snapshot.traces.forEach((e, i) => {
    const mark = lastMark.get(e.device);
    if (mark !== undefined && i > mark && e.action === 'alloc' && e.address !== null) {
      let device = out.get(e.device);
      if (!device) {
        device = new Map();
        out.set(e.device, device);
      }
      device.set(e.address, e.size);
    }
  });
  return out;
}
